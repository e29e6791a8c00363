-- User mistake: item() of a tensor with more than one element.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("item_multi", function() return tp.ones{2, 3}:item() end,
  "item", "{2,3}")
check.summary()
