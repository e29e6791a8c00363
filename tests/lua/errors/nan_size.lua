-- User mistake: NaN as a size.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("nan_size", function() return tp.zeros{0 / 0} end,
  "tp.zeros")
check.summary()
