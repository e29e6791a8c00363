-- User mistake: the output names a letter no operand has, or names one twice.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("einsum_output_letter.unknown", function()
  return tp.einsum("ij,jk->iz", tp.ones{3, 4}, tp.ones{4, 5})
end, "tp.einsum: output index 'z' does not appear in any operand of spec 'ij,jk->iz'")
check.mistake("einsum_output_letter.twice", function() return tp.einsum("ij->ii", tp.ones{3, 3}) end,
  "tp.einsum: output index 'i' appears twice")
check.mistake("einsum_output_letter.path", function()
  return tp.einsum_path("ij->k", tp.ones{3, 3})
end, "tp.einsum_path: output index 'k' does not appear")
check.summary()
