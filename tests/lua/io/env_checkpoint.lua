-- tp.save_env / tp.load_env: a checkpoint restores every named tensor, all or nothing.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  return p .. "-ckpt"
end

-- The folder of the checkpoint in dir (save_env writes each into a fresh dir/v-XXXX).
local function folder(dir)
  local p = assert(io.popen("ls '" .. dir .. "'"))
  local found
  for line in p:lines() do
    if line:match("^v%-") then
      assert(not found, "more than one checkpoint folder in " .. dir)
      found = dir .. "/" .. line
    end
  end
  p:close()
  return found
end

local function listing(dir)
  local p = assert(io.popen("ls -A '" .. dir .. "' 2>/dev/null"))
  local out = {}
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

local function names()
  local out = {}
  for k in pairs(tp.env) do out[#out + 1] = k end
  table.sort(out)
  return out
end

local function clear()
  for _, n in ipairs(names()) do tp.env[n] = nil end
end

local function snapshot()
  local out = {}
  for _, n in ipairs(names()) do
    local x = tp.env[n]
    out[n] = {dtype = x.dtype, shape = x.shape, value = x:dim() == 0 and x:item() or x:totable()}
  end
  return out
end

test("env.round_trip", function()
  clear()
  tp.env.w = tp.randn({4, 3}, {seed = 1})
  tp.env.b = tp.arange(1, 3, {dtype = "f64"})
  tp.env.n = tp.tensor({{1, 2}, {3, 4}}, {dtype = "i64"})
  tp.env.k = tp.tensor({5, 6, 7}, {dtype = "i32"})
  tp.env.mask = tp.tensor{true, false, true}
  tp.env.s = tp.tensor(3.5)
  tp.env.pending = tp.env.b * 2  -- not yet computed: save_env computes it
  local want = snapshot()
  local dir = tmpdir()
  eq(tp.save_env(dir), {"b", "k", "mask", "n", "pending", "s", "w"})
  clear()
  eq(names(), {})
  local loaded = tp.load_env(dir)
  table.sort(loaded)
  eq(loaded, {"b", "k", "mask", "n", "pending", "s", "w"})
  eq(snapshot(), want)
  eq(tp.load(folder(dir) .. "/w.npy"):totable(), want.w.value)  -- plain .npy files
  os.execute("rm -rf '" .. dir .. "'")
end)

test("env.load_keeps_other_names", function()
  clear()
  tp.env.a = tp.ones{2}
  local dir = tmpdir()
  tp.save_env(dir)
  tp.env.a = tp.zeros{2}
  tp.env.other = tp.full({3}, 9)
  tp.load_env(dir)
  eq(tp.env.a:totable(), {1, 1})
  eq(tp.env.other:totable(), {9, 9, 9})
  os.execute("rm -rf '" .. dir .. "'")
end)

test("env.failed_load_changes_nothing", function()
  clear()
  tp.env.a = tp.ones{2}
  tp.env.z = tp.arange(1, 4)
  local dir = tmpdir()
  tp.save_env(dir)
  tp.env.a = tp.full({3}, 5)
  tp.env.only = tp.ones{1}
  local before = snapshot()
  -- Truncate z.npy: the load must fail naming it and bind nothing (a.npy is fine).
  local z = folder(dir) .. "/z.npy"
  local f = assert(io.open(z, "rb"))
  local bytes = f:read("a")
  f:close()
  f = assert(io.open(z, "wb"))
  f:write(bytes:sub(1, #bytes - 2))
  f:close()
  check.check_error(function() tp.load_env(dir) end, "tp.load_env: ", "z.npy", "truncated")
  eq(snapshot(), before)
  -- A missing file.
  os.remove(z)
  check.check_error(function() tp.load_env(dir) end, "tp.load_env: ", "z.npy", "cannot open")
  eq(snapshot(), before)
  -- A missing checkpoint.
  check.check_error(function() tp.load_env(dir .. "/nope") end, "tp.load_env: ", "manifest.json")
  eq(snapshot(), before)
  os.execute("rm -rf '" .. dir .. "'")
end)

test("env.save_again_replaces_the_folder", function()
  clear()
  tp.env.a = tp.ones{2}
  local dir = tmpdir()
  tp.save_env(dir)
  local first = folder(dir)
  tp.env.a = tp.full({2}, 3)
  tp.save_env(dir)
  local second = folder(dir)  -- exactly one: the first one was removed after the commit
  check.truthy(second ~= first, "a new folder")
  eq(#listing(dir), 2)
  tp.load_env(dir)
  eq(tp.env.a:totable(), {3, 3})
  os.execute("rm -rf '" .. dir .. "'")
end)

test("env.failed_save_leaves_no_folder", function()
  clear()
  tp.env.a = tp.ones{2}
  local parent = tmpdir()
  local dir = parent .. "/deeper"
  -- A file named like the folder to create: the save fails, and leaves nothing of its own.
  os.execute("mkdir -p '" .. parent .. "' && touch '" .. dir .. "'")
  check.check_error(function() tp.save_env(dir .. "/x") end, "tp.save_env: ")
  eq(listing(parent), {"deeper"})
  os.execute("rm -rf '" .. parent .. "'")
  check.check_error(function() tp.save_env(parent .. "/new/ckpt/..\0") end, "tp.save_env")
  eq(listing(parent), {})
end)

test("save.replaces_only_regular_files", function()
  local dir = tmpdir()
  os.execute("mkdir -p '" .. dir .. "' && ln -s target '" .. dir .. "/link.npy' && mkfifo '" .. dir .. "/fifo'")
  check.check_error(function() tp.save(tp.ones{2}, "/dev/null") end, "tp.save: ", "'/dev/null'", "a device",
                    "only a regular file is replaced")
  check.truthy(os.execute("test -c /dev/null"), "/dev/null is still a device")
  check.check_error(function() tp.save(tp.ones{2}, dir .. "/link.npy") end, "tp.save: ", "a symbolic link")
  check.truthy(os.execute("test -L '" .. dir .. "/link.npy'"), "the link is still a link")
  check.check_error(function() tp.save(tp.ones{2}, dir .. "/fifo") end, "tp.save: ", "a FIFO")
  check.truthy(os.execute("test -p '" .. dir .. "/fifo'"), "the FIFO is still a FIFO")
  eq(#listing(dir), 2)  -- no temporaries left
  os.execute("rm -rf '" .. dir .. "'")
end)

check.summary()
