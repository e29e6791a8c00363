-- User mistake: select of an index past the end.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("select_out_of_range.1", function() return tp.ones{3, 2}:select(1, 4) end,
  "select", "index 4", "{3,2}")
check.mistake("select_out_of_range.2", function() return tp.ones{3, 2}[5] end,
  "5", "{3,2}")
check.mistake("select_out_of_range.3", function() return tp.ones{3, 2}:select(2, -3) end,
  "select", "-3", "{3,2}")
check.summary()
