-- User mistake: matmul of a 0-d tensor.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("matmul_scalar", function() return tp.matmul(tp.tensor(2), tp.ones{2}) end,
  "tp.matmul", "{}", "{2}")
check.summary()
