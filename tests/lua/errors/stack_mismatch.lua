-- User mistake: stack of tensors of different shapes.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("stack_mismatch", function() return tp.stack({tp.ones{2}, tp.ones{3}}, 1) end,
  "tp.stack", "{3}", "{2}")
check.summary()
