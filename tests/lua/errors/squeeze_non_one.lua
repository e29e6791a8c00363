-- User mistake: squeeze of a dimension whose size is not 1.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("squeeze_non_one", function() return tp.ones{2, 3}:squeeze(1) end,
  "squeeze", "{2,3}", "size 2")
check.summary()
