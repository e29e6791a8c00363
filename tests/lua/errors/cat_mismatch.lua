-- User mistake: cat of tensors whose other dimensions differ.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("cat_mismatch.1", function() return tp.cat({tp.ones{2, 3}, tp.ones{2, 4}}, 1) end,
  "tp.cat", "{2,4}", "{2,3}")
check.mistake("cat_mismatch.2", function() return tp.cat({tp.ones{2, 3}, tp.ones{3}}, 1) end,
  "tp.cat", "{3}", "{2,3}")
check.summary()
