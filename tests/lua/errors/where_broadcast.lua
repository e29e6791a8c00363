-- User mistake: where with a condition of another shape.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("where_broadcast", function() return tp.where(tp.tensor{true, false}, tp.ones{3}, 0) end,
  "tp.where", "{2}", "{3}")
check.summary()
