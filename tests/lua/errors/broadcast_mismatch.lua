-- User mistake: binary op on shapes that do not broadcast.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("broadcast_mismatch.1", function() return tp.maximum(tp.ones{2, 3}, tp.ones{4}) end,
  "tp.maximum", "{2,3}", "{4}")
check.mistake("broadcast_mismatch.2", function() return tp.ones{2, 3} + tp.ones{4} end,
  "{2,3}", "{4}", "broadcast")
check.mistake("broadcast_mismatch.3", function() return tp.ones{2, 3}:lt(tp.ones{3, 2}) end,
  "lt", "{2,3}", "{3,2}")
check.summary()
