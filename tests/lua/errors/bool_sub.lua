-- User mistake: subtraction of bool tensors.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("bool_sub.1", function() return tp.tensor{true} - tp.tensor{false} end,
  "subtraction", "bool")
check.mistake("bool_sub.2", function() return tp.tensor{true} - true end,
  "subtraction", "bool")
check.summary()
