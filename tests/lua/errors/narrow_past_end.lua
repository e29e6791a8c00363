-- User mistake: narrow that runs past the end.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("narrow_past_end", function() return tp.ones{3}:narrow(1, 2, 3) end,
  "narrow", "2..4", "size 3")
check.summary()
