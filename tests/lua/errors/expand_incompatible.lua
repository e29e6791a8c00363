-- User mistake: expand of a dimension that is not 1.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("expand_incompatible.1", function() return tp.ones{2, 3}:expand{4, 3} end,
  "expand", "{2,3}", "{4,3}")
check.mistake("expand_incompatible.2", function() return tp.ones{2, 3}:expand{3} end,
  "expand", "{2,3}", "{3}")
check.summary()
