-- User mistake: a size past int64's range. It was converted first (undefined in C++) and
-- reported as "got {-9223372036854775808}".
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("size.2^63", function() return tp.zeros{2 ^ 63} end,
  "tp.zeros", "shape entry 1 is out of range, got 9.22337e+18")
check.mistake("size.-2^64", function() return tp.ones{3, -2 ^ 64} end, "shape entry 2 is out of range")
check.mistake("size.1e300", function() return tp.full({1e300}, 1) end, "out of range")
check.mistake("fill.int_out_of_range", function() return tp.full({2}, 2 ^ 63, {dtype = "i64"}) end,
  "tp.full", "cannot fill a i64 tensor with")
check.mistake("option.out_of_range", function() return tp.rand({2}, {seed = 2 ^ 64}) end,
  "option 'seed' must be an integer")
check.summary()
