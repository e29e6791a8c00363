-- User mistake: replacing tp.env's metatable. It is protected: the named tensors stay visible
-- and new bindings stay named tensors (which tp.save_env writes).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
tp.env.w = tp.ones{3}
check.mistake("env_metatable", function() setmetatable(tp.env, nil) end, "cannot change a protected metatable")
check.test("env_metatable.intact", function()
  check.eq(getmetatable(tp.env), "tp.env")
  check.eq(tp.env.w:sum():item(), 3)
  tp.env.v = tp.ones{2}
  check.eq(rawget(tp.env, "v"), nil)  -- a binding, not a plain field
  local names = {}
  for k in pairs(tp.env) do names[#names + 1] = k end
  table.sort(names)
  check.eq(names, {"keep", "v", "w"})
end)
check.summary()
