-- User mistake: an option key that does not exist.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("unknown_option.1", function() return tp.zeros({2}, {dtyp = "f32"}) end,
  "tp.zeros", "dtyp")
check.mistake("unknown_option.2", function() return tp.ones{2, 3}:sum(1, {keep_dim = true}) end,
  "sum", "keep_dim")
check.mistake("unknown_option.3", function() return tp.rand({2}, {sed = 3}) end,
  "tp.rand", "sed")
check.summary()
