-- User mistake: dimension 0 (dimensions are 1-based).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("dim_zero", function() return tp.ones{2, 3}:sum(0) end,
  "sum", "dimension 0")
check.summary()
