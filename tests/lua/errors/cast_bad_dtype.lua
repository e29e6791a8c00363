-- User mistake: cast to an unknown dtype.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("cast_bad_dtype", function() return tp.ones{2}:cast("float") end,
  "cast", "float")
check.summary()
