-- User mistake: tp.hermitian on a real tensor (a real tensor is Hermitian when symmetric).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("hermitian_real_tensor", function()
  return tp.randn({3, 3}, {symmetry = tp.hermitian{1, 2}})
end, "tp.randn", "hermitian{1,2} needs a complex tensor (c64, c128), got f32 {3,3}", "use tp.symmetric")
check.summary()
