-- User mistake: t() of a 3-D tensor.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("t_on_3d", function() return tp.ones{2, 3, 4}:t() end,
  "t", "{2,3,4}")
check.summary()
