-- User mistake: a term of the spec names more or fewer dims than its operand has.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("einsum_rank.1", function()
  return tp.einsum("ij,jk->ik", tp.ones{3, 4}, tp.ones{4, 5, 6})
end, "tp.einsum: operand 2 has 3 dims but 'jk' names 2 (shape {4,5,6})")
check.mistake("einsum_rank.tensordot", function() return tp.tensordot(tp.ones{3, 4}, tp.ones{4}, 2) end,
  "tp.tensordot: cannot sum the last 2 dims of {3,4} with the first 2 of {4}")
check.mistake("einsum_rank.tensordot_dim", function()
  return tp.tensordot(tp.ones{3, 4}, tp.ones{4}, {{3}, {1}})
end, "tp.tensordot", "out of range")
check.summary()
