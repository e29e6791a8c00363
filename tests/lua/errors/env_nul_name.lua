-- User mistake: a name with a NUL byte. It was cut at the NUL ("a\0x" bound "a"): now every
-- read and write of such a name is refused, and tp.env.a is untouched.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
tp.env.a = tp.ones{2}
check.mistake("env_nul_name.bind", function() tp.env["a\0x"] = tp.zeros{2} end,
  "tp.env: 'a\\0x' is not a valid tensor name")
check.mistake("env_nul_name.read", function() return tp.env["a\0x"] end, "'a\\0x' is not a valid tensor name")
check.mistake("env_nul_name.drop", function() tp.env["a\0"] = nil end, "'a\\0' is not a valid tensor name")
check.mistake("env_bad_name.read", function() return tp.env["not a name"] end, "'not a name' is not a valid")
check.test("env_nul_name.a_untouched", function() check.eq(tp.env.a:totable(), {1, 1}) end)
check.mistake("create_nul_name", function() return tp.ones({2}, {name = "b\0c"}) end,
  "tp.ones", "option 'name' must not contain NUL bytes, got 'b\\0c'")
check.test("create_nul_name.nothing_bound", function() check.eq(tp.env.b, nil) end)
check.summary()
