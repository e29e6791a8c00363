-- User mistake: permute with a list that is not a permutation.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("permute_not_permutation.1", function() return tp.ones{2, 3, 4}:permute{1, 1, 2} end,
  "permute", "twice")
check.mistake("permute_not_permutation.2", function() return tp.ones{2, 3, 4}:permute{1, 2} end,
  "permute", "{2,3,4}")
check.summary()
