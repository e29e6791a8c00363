-- User mistake: a table where a Tensor is expected.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("tensor_expected", function() return tp.matmul(tp.ones{2, 2}, {1, 2}) end,
  "bad argument #2 to 'tp.matmul' (Tensor expected, got table)")
check.summary()
