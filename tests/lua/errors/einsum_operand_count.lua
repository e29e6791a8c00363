-- User mistake: the spec names more or fewer operands than were given.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("einsum_operand_count.more", function()
  return tp.einsum("ij,jk->ik", tp.ones{2, 3}, tp.ones{3, 4}, tp.ones{4, 5})
end, "tp.einsum: spec 'ij,jk->ik' names 2 operands but 3 were given")
check.mistake("einsum_operand_count.fewer", function()
  return tp.einsum("ij,jk,kl->il", tp.ones{2, 3}, tp.ones{3, 4})
end, "tp.einsum: spec 'ij,jk,kl->il' names 3 operands but 2 were given")
check.mistake("einsum_operand_count.none", function() return tp.einsum("ij->i") end,
  "tp.einsum: needs at least one operand")
check.summary()
