-- User mistake: matmul whose batch dimensions do not broadcast.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("matmul_batch", function() return tp.matmul(tp.ones{2, 3, 4}, tp.ones{3, 4, 5}) end,
  "tp.matmul", "{2,3,4}", "{3,4,5}")
check.summary()
