-- User mistake: linspace with n = 0.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("linspace_zero", function() return tp.linspace(0, 1, 0) end,
  "tp.linspace", "0")
check.summary()
