-- User mistake: arange whose range is empty.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("arange_empty.1", function() return tp.arange(5, 1) end,
  "tp.arange", "empty")
check.mistake("arange_empty.2", function() return tp.arange(1, 5, -1) end,
  "tp.arange", "empty")
check.summary()
