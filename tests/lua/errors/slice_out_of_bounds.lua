-- User mistake: a slice range past the end of a dimension.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("slice_out_of_bounds.1", function() return tp.ones{3, 4}[{{2, 5}}] end,
  "{3,4}", "out of bounds")
check.mistake("slice_out_of_bounds.2", function() return tp.ones{3, 4}[{{}, {0, 2}}] end,
  "{3,4}")
check.summary()
