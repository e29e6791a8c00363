-- User mistake: a Lua integer that the tensor's small integer dtype cannot hold (numpy 2 raises
-- OverflowError too), and values that do not fit when a tensor is made.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local u = tp.tensor({1, 2}, {dtype = "u8"})
check.mistake("int8_overflow.add", function() return u + 256 end, "Tensor.__add", "256", "does not fit in u8")
check.mistake("int8_overflow.neg", function() return tp.ones({2}, {dtype = "i8"}) * -129 end, "-129", "i8")
check.mistake("int8_overflow.tensor", function() return tp.tensor({-1}, {dtype = "u8"}) end, "tp.tensor", "-1", "u8")
check.mistake("int8_overflow.arange", function() return tp.arange(0, 300, 1, {dtype = "i8"}) end,
  "tp.arange", "does not fit in i8")
check.mistake("int8_overflow.linalg_f16", function() return tp.linalg.det(tp.eye(2, {dtype = "f16"})) end,
  "f16", "linalg")
check.summary()
