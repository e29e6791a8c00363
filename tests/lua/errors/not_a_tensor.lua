-- User mistake: a function or method called on something that is not a tensor.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("not_a_tensor.1", function() return tp.exp("abc") end,
  "bad argument #1 to 'tp.exp'", "got string")
check.mistake("not_a_tensor.2", function() return tp.ones{2}.sum("abc") end,
  "bad argument #1", "sum", "got string")
check.summary()
