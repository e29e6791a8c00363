-- User mistake: reshape to a shape with another number of elements.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("reshape_numel.1", function() return tp.ones{2, 3}:reshape{4, 4} end,
  "reshape", "{2,3}", "{4,4}")
check.mistake("reshape_numel.2", function() return tp.ones{2, 3}:reshape{4, -1} end,
  "reshape", "{2,3}", "{4,-1}")
check.summary()
