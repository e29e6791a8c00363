-- User mistake: a value of the wrong type where a Tensor is expected
-- (a nested table of numbers converts, as tp.tensor; anything else does not).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("tensor_expected.1", function() return tp.matmul(tp.ones{2, 2}, print) end,
  "bad argument #2 to 'tp.matmul'", "expected, got function")
check.mistake("tensor_expected.2", function() return tp.matmul(tp.ones{2, 2}, {x = 1}) end,
  "tp.matmul")
check.mistake("tensor_expected.3", function() return tp.ones{2} + {"a"} end,
  "string")
check.summary()
