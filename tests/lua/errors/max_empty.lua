-- User mistake: max over an empty dim, which has no identity (numpy raises too); sum and prod
-- have one (0 and 1), and max over a non-empty dim of an empty tensor is an empty result.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("max_empty", function() return tp.zeros{0, 3}:max(1) end,
  "tp.max", "max over the empty dims {1}", "{0,3}", "no identity")
check.mistake("min_empty_all", function() return tp.zeros{2, 0}:min() end,
  "tp.min", "min over the empty dims {1,2}", "{2,0}")
check.mistake("argmax_empty", function() return tp.zeros{3, 0}:argmax(2) end,
  "tp.argmax", "empty dim", "{3,0}")
check.summary()
