-- User mistake: rand asked for an integer dtype.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("rand_int_dtype.1", function() return tp.rand({2}, {dtype = "i32"}) end,
  "tp.rand", "i32")
check.mistake("rand_int_dtype.2", function() return tp.randn({2}, {dtype = "bool"}) end,
  "tp.randn", "bool")
check.summary()
