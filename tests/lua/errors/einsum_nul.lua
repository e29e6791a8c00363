-- User mistake: an einsum spec with a NUL byte ("ii->\0" was read as "ii->", a trace).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
check.mistake("einsum_nul", function() return tp.einsum("ii->\0", tp.ones{2, 2}) end,
  "tp.einsum", "spec string must not contain NUL bytes, got 'ii->\\0'")
check.mistake("einsum_control", function() return tp.einsum("i\1i->", tp.ones{2, 2}) end,
  "tp.einsum", "bad character '\\x01'")
check.mistake("cast_nul", function() return tp.ones{2}:cast("f32\0junk") end,
  "unknown dtype 'f32\\0junk'")
check.summary()
