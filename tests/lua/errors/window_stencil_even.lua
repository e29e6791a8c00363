-- User mistake: a stencil kernel with an even size has no centre.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("window_stencil_even.1", function() return tp.stencil(tp.ones{4, 5}, tp.ones{2, 3}) end,
  "tp.stencil", "{2,3}", "odd")
check.mistake("window_stencil_even.2", function() return tp.stencil(tp.ones{4, 5}, tp.ones{3}) end,
  "tp.stencil", "{3}", "{4,5}", "ranks must match")
check.mistake("window_stencil_even.3", function()
  return tp.stencil(tp.ones{4, 5}, tp.ones{3, 3}, {boundary = "mirror"}) end,
  "tp.stencil", "unknown boundary 'mirror'")
check.summary()
