-- Parallel .npy I/O: on N ranks tp.save / tp.save_env write each rank's own boxes (rank 0
-- writes the header), tp.load{name=} / tp.load_env read each rank's own rows into its shard
-- store. Files written on 2 ranks load on 4 and on 1, and the other way round.
--   tapestry parallel_npy.lua                 -- loopback: children on TAPESTRY_RANKS=2, 4, 1
--   mpirun -n 2 tapestry parallel_npy.lua save DIR;  mpirun -n 4 ... load DIR  (tests/mpi)
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local mode, dir = arg[1], arg[2]

local function want_a() return tp.arange(1, 66 * 48):reshape{66, 48} * 1.5 end
local function want_d() return tp.arange(1, 35):reshape{7, 5}:cast("i32") end
local function want_b() return tp.arange(1, 10, {dtype = "i64"}) * 3 end
local function want_c() return tp.linspace(-1, 1, 24, {dtype = "f64"}):reshape{2, 3, 4} end

local function row(name)
  for _, r in ipairs(tp.tensors()) do
    if r.name == name then return r end
  end
end

-- The layout a loaded (or stored) tensor has: split over the ranks, each holding its own rows.
local function check_sharded(name)
  local r = assert(row(name), name)
  if tp.mesh().ranks == 1 then return end
  check.truthy(r.layout:find("split", 1, true), name .. ": " .. r.layout)
  local total = 0
  for _, b in ipairs(r.bytes_per_rank) do
    check.truthy(b < r.bytes, name .. ": a rank holds all of it")
    total = total + b
  end
  eq(total, r.bytes)
end

local function save(d)
  test("parallel.save_env", function()
    tp.env.a = want_a()
    tp.env.b = want_b()
    tp.env.c = want_c()
    tp.env.flags = (want_a() - 21):cast("bool")
    tp.env.s = want_a():sum()  -- 0-d
    tp.env.d = want_d()        -- small: may be computed whole on rank 0
    local names = tp.save_env(d .. "/ckpt")
    check_sharded("a")  -- computed sharded by save_env, written by each rank
    table.sort(names)
    eq(names, {"a", "b", "c", "d", "flags", "s"})
  end)
  test("parallel.save", function()
    tp.save(tp.env.a, d .. "/a.npy")           -- a named, stored tensor
    tp.save(tp.env.a * 2 + 1, d .. "/a2.npy")   -- an expression: computed sharded, then written
    tp.save(tp.env.c:sum(3), d .. "/c3.npy")
  end)
end

local function load(d)
  test("parallel.load_env", function()
    local names = tp.load_env(d .. "/ckpt")
    table.sort(names)
    eq(names, {"a", "b", "c", "d", "flags", "s"})
    check_sharded("a")
    check_sharded("c")
    eq(tp.env.a:totable(), want_a():totable())
    eq(tp.env.b:totable(), want_b():totable())
    eq(tp.env.c:totable(), want_c():totable())
    eq(tp.env.flags:totable(), ((want_a() - 21):cast("bool")):totable())
    eq(tp.env.flags.dtype, "bool")
    eq(tp.env.d:totable(), want_d():totable())
    eq(tp.env.d.dtype, "i32")
    check.near(tp.env.s:item(), want_a():sum():item(), 1e-5)
  end)
  test("parallel.load_named", function()
    local x = tp.load(d .. "/a2.npy", {name = "x"})
    tp.eval(x)  -- loads are lazy: each rank reads its part at the next observation
    check_sharded("x")
    eq(x:totable(), (want_a() * 2 + 1):totable())
    local y = tp.load(d .. "/a.npy", {name = "y", dtype = "f64"})
    eq(y.dtype, "f64")
    eq(tp.env.y:totable(), (want_a():cast("f64")):totable())
    check.near(tp.load(d .. "/c3.npy", {name = "c3"}):totable(), want_c():sum(3):totable(), 1e-12)
    -- Computing with loaded tensors reads them where they lie.
    check.near((tp.env.x - tp.env.a * 2):sum():item(), 66 * 48, 1e-5)
  end)
  test("parallel.resave", function()
    -- Written back from this rank count's layout, read whole on rank 0.
    tp.save(tp.env.x, d .. "/x_again.npy")
    eq(tp.load(d .. "/x_again.npy"):totable(), (want_a() * 2 + 1):totable())
  end)
end

-- With TAPESTRY_IO_FAULT=2 on 3 ranks (after a save into d): every parallel operation fails
-- naming rank 2 and leaves the files and the environment as they were.
local function fail(d)
  local function named(e) return tostring(e):find("rank 2", 1, true) ~= nil end
  local function exists(p)
    local f = io.open(p)
    if f then f:close() end
    return f ~= nil
  end
  test("parallel.fail", function()
    tp.env.keep = tp.arange(1, 12)
    local ok, e = pcall(tp.save, want_a() * 2, d .. "/z.npy")
    check.truthy(not ok and named(e), tostring(e))
    check.truthy(not exists(d .. "/z.npy"), "z.npy left")
    ok, e = pcall(tp.load_env, d .. "/ckpt")
    check.truthy(not ok and named(e), tostring(e))
    eq(tp.env.a, nil)
    tp.env.big = want_a() + 1
    ok, e = pcall(tp.save_env, d .. "/ckpt2")
    check.truthy(not ok and named(e), tostring(e))
    check.truthy(not exists(d .. "/ckpt2/manifest.json"), "manifest written")
    check.truthy(not exists(d .. "/ckpt2/big.npy"), "big.npy left")
    eq(tp.env.keep:sum():item(), 78)
    eq(tp.env.big:sum():item(), (want_a() + 1):sum():item())
  end)
end

if mode == "fail" then
  fail(dir)
  check.summary()
  return
elseif mode == "save" then
  save(dir)
  check.summary()
  return
elseif mode == "load" then
  load(dir)
  check.summary()
  return
end

-- Loopback: children on virtual ranks.
local tapestry = arg[-1]
local script = arg[0]
local function child(env, ...)
  local cmd = env .. " '" .. tapestry .. "' '" .. script .. "'"
  for _, a in ipairs({...}) do cmd = cmd .. " '" .. a .. "'" end
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok = p:close()
  return ok, out
end
local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  os.execute("mkdir -p '" .. p .. "-pio'")
  return p .. "-pio"
end

test("parallel.two_to_four_and_one", function()
  local d = tmpdir()
  local ok, out = child("TAPESTRY_RANKS=2", "save", d)
  check.truthy(ok, out)
  for _, ranks in ipairs({4, 1, 3}) do
    ok, out = child("TAPESTRY_RANKS=" .. ranks, "load", d)
    check.truthy(ok, ranks .. " ranks: " .. out)
  end
  os.execute("rm -rf '" .. d .. "'")
end)

test("parallel.four_to_two", function()
  local d = tmpdir()
  local ok, out = child("TAPESTRY_RANKS=4", "save", d)
  check.truthy(ok, out)
  ok, out = child("TAPESTRY_RANKS=2", "load", d)
  check.truthy(ok, out)
  os.execute("rm -rf '" .. d .. "'")
end)

-- A failure on one rank is a Lua error naming it; no file, binding or shard is left.
test("parallel.failure_names_rank", function()
  local d = tmpdir()
  local ok, out = child("TAPESTRY_RANKS=2", "save", d)
  check.truthy(ok, out)
  ok, out = child("TAPESTRY_RANKS=3 TAPESTRY_IO_FAULT=2", "fail", d)
  check.truthy(ok, out)
  os.execute("rm -rf '" .. d .. "'")
end)

check.summary()
