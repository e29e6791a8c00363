-- User mistake: a shape too large to ever allocate.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("huge_size", function() return tp.zeros{2 ^ 40, 2 ^ 40} end,
  "tp.zeros", "{1099511627776,1099511627776}")
check.summary()
