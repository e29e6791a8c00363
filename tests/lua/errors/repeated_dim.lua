-- User mistake: a reduction listing one dimension twice.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("repeated_dim.1", function() return tp.ones{2, 3}:sum{1, 1} end,
  "sum", "twice")
check.mistake("repeated_dim.2", function() return tp.ones{2, 3}:max{2, -1} end,
  "max", "twice")
check.summary()
