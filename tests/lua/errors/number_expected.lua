-- User mistake: a string where a number is expected.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("number_expected.1", function() return tp.full({2, 2}, "abc") end,
  "bad argument #2 to 'tp.full'", "got string")
check.mistake("number_expected.2", function() return tp.linspace(0, 1, "many") end,
  "bad argument #3 to 'tp.linspace'", "got string")
check.summary()
