-- User mistake: arange with step 0.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("arange_step_zero", function() return tp.arange(1, 5, 0) end,
  "tp.arange", "step")
check.summary()
