-- User mistake: tp.tensor of a ragged nested table.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("ragged_table.1", function() return tp.tensor{{1, 2}, {3}} end,
  "tp.tensor")
check.mistake("ragged_table.2", function() return tp.tensor{1, "x"} end,
  "tp.tensor")
check.summary()
