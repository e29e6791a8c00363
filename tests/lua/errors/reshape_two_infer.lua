-- User mistake: reshape with two -1.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("reshape_two_infer", function() return tp.ones{2, 3}:reshape{-1, -1} end,
  "reshape", "{-1,-1}")
check.summary()
