-- User mistake: a negative dimension before the first one.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("dim_out_of_range_negative.1", function() return tp.ones{2, 3}:sum(-3) end,
  "sum", "-3", "2-D")
check.mistake("dim_out_of_range_negative.2", function() return tp.ones{2, 3}:argmax(-4) end,
  "argmax", "-4")
check.summary()
