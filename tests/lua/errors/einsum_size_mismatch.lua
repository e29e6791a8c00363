-- User mistake: one letter names dims of different sizes; the message names both.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("einsum_size_mismatch.1", function()
  return tp.einsum("ij,jk->ik", tp.ones{3, 4}, tp.ones{5, 2})
end, "tp.einsum: sizes of index 'j' differ: 4 in operand 1 {3,4} and 5 in operand 2 {5,2}")
check.mistake("einsum_size_mismatch.diagonal", function() return tp.einsum("ii->i", tp.ones{3, 4}) end,
  "tp.einsum: repeated index 'i' in operand 1 needs equal sizes, got 3 and 4")
check.mistake("einsum_size_mismatch.tensordot", function()
  return tp.tensordot(tp.ones{3, 4}, tp.ones{5, 2}, 1)
end, "tp.tensordot: dimension 2 of a (size 4) and dimension 1 of b (size 5) differ ({3,4} and {5,2})")
check.summary()
