-- User mistake: a dimension past the last one.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("dim_out_of_range.1", function() return tp.ones{2, 3}:sum(3) end,
  "sum", "dimension 3", "2-D")
check.mistake("dim_out_of_range.2", function() return tp.ones{2, 3}:size(5) end,
  "size", "5")
check.mistake("dim_out_of_range.3", function() return tp.ones{2, 3}:transpose(1, 3) end,
  "transpose", "3")
check.summary()
