-- User mistake: more than 64 dims (numpy's limit, and tp.load's). Creators and reshape took
-- 100,000, and printing a tensor of 30,000 dims crashed the process.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local function ones(n)
  local s = {}
  for i = 1, n do s[i] = 1 end
  return s
end
check.mistake("dims.zeros", function() return tp.zeros(ones(65)) end,
  "tp.zeros", "a shape of 65 dims; a tensor has at most 64")
check.mistake("dims.zeros_30000", function() return tostring(tp.zeros(ones(30000))) end, "at most 64")
check.mistake("dims.reshape", function() return tp.ones{2}:reshape(ones(100000)) end,
  "tp.reshape", "a shape of 100000 dims")
check.mistake("dims.reshape_varargs", function() return tp.ones{1}:reshape(table.unpack(ones(70))) end,
  "tp.reshape", "a shape of 70 dims")
check.mistake("dims.expand", function() return tp.ones{1}:expand(ones(65)) end, "tp.expand", "at most 64")
check.mistake("dims.unsqueeze", function()
  local x = tp.ones(ones(64))
  return x:unsqueeze(1)
end, "tp.unsqueeze", "65 dims; a tensor has at most 64")
check.test("dims.64_is_fine", function()
  local x = tp.ones(ones(64)) * 2
  check.eq(x:sum():item(), 2)
  check.truthy(tostring(x):find("%[f32 tensor of shape {1,1,1"), "prints")
end)
check.summary()
