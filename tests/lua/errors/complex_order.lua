-- User mistake: an op that needs an order (or has no complex kernel) given complex numbers.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local z = tp.complex(tp.tensor{1, -2, 3}, tp.tensor{0.5, 1, -1})
check.mistake("complex_order.max", function() return z:max() end, "tp.max", "x is c64", "complex")
check.mistake("complex_order.lt", function() return z:lt(1) end, "lt", "a is c64", "complex")
check.mistake("complex_order.sort", function() return tp.sort(z) end, "tp.sort", "x is c64")
check.mistake("complex_order.clamp", function() return z:clamp(0, 1) end, "maximum", "complex")
check.mistake("complex_order.cumsum", function() return tp.cumsum(z) end, "tp.cumsum", "c64")
check.mistake("complex_order.item", function() return z:sum():item() end, "c64", "x:real()")
check.summary()
