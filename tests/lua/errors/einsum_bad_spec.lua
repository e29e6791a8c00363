-- User mistake: an einsum spec with characters it cannot hold.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("einsum_bad_spec.char", function() return tp.einsum("i#,jk->ik", tp.ones{2, 3}, tp.ones{3, 4}) end,
  "tp.einsum: bad character '#' in spec 'i#,jk->ik'")
check.mistake("einsum_bad_spec.ellipsis", function() return tp.einsum("...i->i", tp.ones{2, 3}) end,
  "tp.einsum: ellipsis '...' is not supported")
check.mistake("einsum_bad_spec.two_arrows", function() return tp.einsum("ij->i->j", tp.ones{2, 3}) end,
  "tp.einsum: bad character '-'")
check.mistake("einsum_bad_spec.not_a_string", function() return tp.einsum(3, tp.ones{2, 3}) end,
  "bad argument #1 to 'tp.einsum' (spec string expected, got number)")
check.mistake("einsum_bad_spec.operand_type", function() return tp.einsum("ij", "x") end,
  "bad argument #2 to 'tp.einsum'")
check.summary()
