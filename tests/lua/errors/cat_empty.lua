-- User mistake: cat of an empty list.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("cat_empty", function() return tp.cat({}, 1) end,
  "tp.cat")
check.summary()
