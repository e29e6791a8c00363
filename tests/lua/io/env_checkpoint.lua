-- tp.save_env / tp.load_env: a checkpoint restores every named tensor, all or nothing.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  return p .. "-ckpt"
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
  eq(tp.load(dir .. "/w.npy"):totable(), want.w.value)  -- plain .npy files
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
  local f = assert(io.open(dir .. "/z.npy", "rb"))
  local bytes = f:read("a")
  f:close()
  f = assert(io.open(dir .. "/z.npy", "wb"))
  f:write(bytes:sub(1, #bytes - 2))
  f:close()
  check.check_error(function() tp.load_env(dir) end, "tp.load_env: ", "z.npy", "truncated")
  eq(snapshot(), before)
  -- A missing file.
  os.remove(dir .. "/z.npy")
  check.check_error(function() tp.load_env(dir) end, "tp.load_env: ", "z.npy", "cannot open")
  eq(snapshot(), before)
  -- A missing checkpoint.
  check.check_error(function() tp.load_env(dir .. "/nope") end, "tp.load_env: ", "manifest.json")
  eq(snapshot(), before)
  os.execute("rm -rf '" .. dir .. "'")
end)

check.summary()
