-- User mistake: matmul with inner dimensions that differ.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("matmul_inner_dim.1", function() return tp.matmul(tp.ones{3, 4}, tp.ones{5, 2}) end,
  "tp.matmul: inner dimensions differ: {3,4} @ {5,2} (4 ~= 5)")
check.mistake("matmul_inner_dim.2", function() return tp.ones{3, 4}:matmul(tp.ones{5, 2}) end,
  "matmul", "{3,4} @ {5,2} (4 ~= 5)")
check.mistake("matmul_inner_dim.3", function() return tp.matmul(tp.ones{4}, tp.ones{3}) end,
  "tp.matmul", "{4} @ {3}")
check.summary()
