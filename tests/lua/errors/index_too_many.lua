-- User mistake: more index entries than dimensions.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("index_too_many", function() return tp.ones{2, 3}[{1, 1, 1}] end,
  "{2,3}")
check.summary()
