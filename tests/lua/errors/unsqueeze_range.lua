-- User mistake: unsqueeze past the end.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("unsqueeze_range", function() return tp.ones{2, 3}:unsqueeze(5) end,
  "unsqueeze", "5")
check.summary()
