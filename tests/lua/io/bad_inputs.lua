-- Mistakes with files: each is an error naming the function and the file, and the session
-- and its named tensors go on.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local mistake = check.mistake

local function tmpfile(bytes)
  local p = os.tmpname()
  local f = assert(io.open(p, "wb"))
  f:write(bytes)
  f:close()
  return p
end

local function npy(dict, data)
  local h = dict .. "\n"
  return "\x93NUMPY\x01\x00" .. string.pack("<I2", #h) .. h .. (data or "")
end

local text = tmpfile("hello, not numpy")
local missing = os.tmpname()
os.remove(missing)

mistake("load.bad_magic", function() tp.load(text) end,
  "tp.load: '" .. text .. "': not a .npy file (bad magic)")
mistake("load.missing", function() tp.load(missing) end, "tp.load: '" .. missing .. "'",
  "cannot open")
mistake("load.not_a_string", function() tp.load(5) end,
  "bad argument #1 to 'tp.load' (string expected, got number)")
mistake("load.unknown_option", function() tp.load(text, {layout = 1}) end, "tp.load",
  "unknown option 'layout'")
mistake("load.bad_name", function() tp.load(text, {name = "1x"}) end, "tp.load",
  "not a valid tensor name")
mistake("load.bad_dtype_option", function() tp.load(text, {dtype = "f128"}) end, "tp.load", "f128")

local cases = {
  {"big_endian", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", ("\0"):rep(8)),
   "big-endian"},
  {"complex256", npy("{'descr': '<c32', 'fortran_order': False, 'shape': (2,), }", ("\0"):rep(64)),
   "unsupported dtype '<c32'"},
  {"object", npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", ("\0"):rep(16)),
   "object arrays"},
  {"truncated", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", ("\0"):rep(20)),
   "truncated"},
  {"negative_size", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }"),
   "negative size -2"},
  {"huge_shape", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
   "overflows"},
  {"malformed", npy("{'descr': '<f8', 'shape': (3,), }", ("\0"):rep(24)), "malformed"},
  {"header_past_end", "\x93NUMPY\x01\x00\xff\x7f{'descr'", "truncated .npy header"},
}
for _, c in ipairs(cases) do
  local p = tmpfile(c[2])
  mistake("load." .. c[1], function() tp.load(p) end, "tp.load: '" .. p .. "': ", c[3])
  os.remove(p)
end

mistake("save.not_a_path", function() tp.save(tp.ones{2}, 3) end,
  "bad argument #2 to 'tp.save' (string expected, got number)")
mistake("save.no_dir", function() tp.save(tp.ones{2}, missing .. "/x/y.npy") end,
  "tp.save: '" .. missing .. "/x/y.npy': cannot open")
mistake("save.not_a_tensor", function() tp.save("x", text) end, "tp.save", "#1")
mistake("save_env.over_a_file", function() tp.save_env(text) end, "tp.save_env: '" .. text .. "'")
mistake("load_env.missing", function() tp.load_env(missing) end, "tp.load_env: '" .. missing,
  "manifest.json")
mistake("load_env.not_a_string", function() tp.load_env() end,
  "bad argument #1 to 'tp.load_env' (string expected, got no value)")

os.remove(text)
check.summary()
