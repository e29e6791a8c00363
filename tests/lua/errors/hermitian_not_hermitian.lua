-- User mistake: a complex tensor declared Hermitian that is not (checked when evaluated).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("hermitian_not_hermitian", function()
  local x = tp.tensor({{1, 2}, {3, 4}}, {dtype = "c128"})
  return x:declare{symmetry = tp.hermitian{1, 2}}:real():sum():item()
end, "tp.declare: x is not Hermitian in dims 1,2 (max |x - conj(x^T)| = 1")
check.summary()
