-- User mistake: a shape with a zero size.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("zero_size", function() return tp.zeros{2, 0} end,
  "tp.zeros", "{2,0}")
check.summary()
