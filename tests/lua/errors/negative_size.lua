-- User mistake: a shape with a negative size.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("negative_size.1", function() return tp.ones{3, -1} end,
  "tp.ones", "{3,-1}")
check.mistake("negative_size.2", function() return tp.rand({-2}, {seed = 1}) end,
  "tp.rand", "{-2}")
check.summary()
