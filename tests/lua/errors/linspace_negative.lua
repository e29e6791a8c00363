-- User mistake: linspace with a negative n (n = 0 is an empty tensor, as numpy).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("linspace_negative", function() return tp.linspace(0, 1, -1) end,
  "tp.linspace", "n must be at least 0", "-1")
check.summary()
