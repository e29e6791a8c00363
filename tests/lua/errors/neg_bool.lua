-- User mistake: negation of a bool tensor.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("neg_bool.1", function() return -tp.tensor{true, false} end,
  "negation", "bool")
check.mistake("neg_bool.2", function() return tp.neg(tp.tensor{true}) end,
  "tp.neg", "bool")
check.summary()
