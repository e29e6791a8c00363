-- User mistake: a size that is not an integer.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("fractional_size", function() return tp.zeros{2.5, 3} end,
  "tp.zeros")
check.summary()
