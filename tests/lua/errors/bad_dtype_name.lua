-- User mistake: a dtype name that does not exist.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("bad_dtype_name.1", function() return tp.zeros({2}, {dtype = "f128"}) end,
  "tp.zeros", "f128", "bf16")
check.mistake("bad_dtype_name.2", function() return tp.tensor({1, 2}, {dtype = "float32"}) end,
  "tp.tensor", "float32")
check.summary()
