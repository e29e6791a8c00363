-- A rank that fails its part of a save (TAPESTRY_IO_FAULT=RANK: that rank fails every parallel
-- I/O job): every format's save over an existing file fails with an error naming the rank and
-- the file, the file keeps its previous content, and no temporary stays. A lazy read failing on
-- one rank names the rank, the file and the slice. Run on 3 virtual ranks (RANK 2) and under
-- mpirun -n 2 (RANK 1) by tests/formats/CMakeLists.txt.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lua/lib/?.lua;" .. package.path
local check = require "check"
local test, eq, truthy = check.test, check.eq, check.truthy

local fault = assert(tonumber(os.getenv("TAPESTRY_IO_FAULT")), "set TAPESTRY_IO_FAULT")
local ranks = tp.mesh().ranks
assert(fault == ranks - 1, "the failing rank is the last one")
local dir, path = check.scratch_dir()
local read_all = check.read_file

local function listing(folder)
  local p = io.popen("ls -A '" .. folder .. "'")
  local s = p:read("a")
  p:close()
  return s
end

-- The bytes of a file, or of every file of a folder (a zarr store).
local function contents(p)
  local f = io.open(p .. "/.zarray")
  if not f then return read_all(p) end
  f:close()
  local all = {}
  for name in listing(p):gmatch("[^\n]+") do all[#all + 1] = name .. "=" .. read_all(p .. "/" .. name) end
  return table.concat(all, ";")
end

test("fault.saves_keep_the_previous_file", function()
  -- The previous files, from a plain value: one process writes each, no parallel job.
  local old = tp.tensor({{1, 2, 3}, {4, 5, 6}})
  tp.save(old, path("a.npy"))
  tp.save_safetensors({w = old}, path("a.safetensors"))
  tp.save_hdf5(old, path("c.h5"), "x")
  tp.save_hdf5(old, path("k.h5"), "x", {chunks = {1, 2}})
  tp.save_zarr(old, path("a.zarr"))
  tp.save_csv(old, path("a.csv"))
  local saves = {
    {"a.npy", function(x) tp.save(x, path("a.npy")) end},
    {"a.safetensors", function(x) tp.save_safetensors({w = x, v = x * 2}, path("a.safetensors")) end},
    {"c.h5", function(x) tp.save_hdf5(x, path("c.h5"), "x") end},
    {"k.h5", function(x) tp.save_hdf5(x, path("k.h5"), "x", {chunks = {7, 2}}) end},
    {"a.zarr", function(x) tp.save_zarr(x, path("a.zarr"), {chunks = {10, 3}}) end},
    {"a.csv", function(x) tp.save_csv(x, path("a.csv"), {columns = {"a", "b", "c"}}) end},
  }
  -- A tensor stored in blocks of rows over every rank: each save is a parallel job.
  tp.env.x = (tp.arange(1, 600):reshape{200, 3} / 4):constrain(tp.grid{ranks, 1})
  tp.eval(tp.env.x)
  for _, s in ipairs(saves) do
    local name, save = s[1], s[2]
    local before = contents(path(name))
    local ok, err = pcall(save, tp.env.x)
    truthy(not ok, name .. ": the save with a failing rank succeeded")
    err = tostring(err)
    truthy(err:find("rank " .. fault, 1, true) and err:find(name, 1, true), name .. ": " .. err)
    truthy(err:find("injected I/O failure", 1, true), name .. ": " .. err)
    eq(contents(path(name)) == before, true, name .. ": the previous file changed")
  end
  truthy(not listing(dir):find("partial", 1, true), listing(dir))
  eq(tp.load(path("a.npy")):totable(), {{1, 2, 3}, {4, 5, 6}})
  eq(tp.env.x:sum():item(), 600 * 601 / 2 / 4, "the session goes on")
end)

test("fault.a_read_failing_on_one_rank", function()
  -- The last rank's rows sit in chunk 9 (rows 181..200); that chunk is garbage.
  tp.save_zarr(tp.tensor(tp.arange(1, 600):reshape{200, 3}:totable()), path("r.zarr"), {chunks = {20, 3}})
  local f = assert(io.open(path("r.zarr") .. "/9.0", "wb"))
  f:write("garbage")
  f:close()
  tp.env.r = tp.load_zarr(path("r.zarr")):constrain(tp.grid{ranks, 1})
  local ok, err = pcall(function() return tp.env.r:sum():item() end)
  truthy(not ok, "the bad chunk went unnoticed")
  err = tostring(err)
  for _, want in ipairs({"rank " .. fault .. ":", "r.zarr", "slice [", "chunk 9.0 does not decode"}) do
    truthy(err:find(want, 1, true), err)
  end
end)

os.execute("rm -rf '" .. dir .. "'")
check.summary()
