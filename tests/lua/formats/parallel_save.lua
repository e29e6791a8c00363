-- Saves written by every rank: a tensor stored sharded (tp.env, tp.eval) is written by the
-- ranks that hold it (CSV rows at offsets from a prefix sum of their lengths, zarr chunks,
-- HDF5 chunks and rows, safetensors rows), and the file is the one a single writer makes from
-- the same values, byte for byte. Layouts that are not blocks of rows (a column split) and chunk
-- grids that straddle the ranks' rows included. Runs on one rank, 3 virtual ranks and under
-- mpirun -n 2; a rank failing is tests/formats/fault.lua.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, truthy = check.test, check.eq, check.truthy

local dir, path = check.scratch_dir()
local read_all = check.read_file
local same = check.same_tensor

-- The same values twice: a stored sharded tensor, and a plain value one process writes whole.
local function pair(expr)
  tp.env.sharded = expr
  tp.eval(tp.env.sharded)
  return tp.env.sharded, tp.tensor(expr:totable()):cast(expr.dtype)
end

-- Split by columns or rows over every rank (one rank: whole); the planner may otherwise keep a
-- small tensor whole on one rank.
local function by_columns(x) return x:constrain(tp.grid{1, tp.mesh().ranks}) end
local function by_rows(x)
  local parts = {tp.mesh().ranks}
  for _ = 2, #x.shape do parts[#parts + 1] = 1 end
  return x:constrain(tp.grid(parts))
end

-- Bytes this process wrote in fn: under mpirun a sharded save's share is less than the whole.
local mpi = os.getenv("OMPI_COMM_WORLD_SIZE") ~= nil
local function written(fn)
  local before = tp.stats().bytes_written
  fn()
  return tp.stats().bytes_written - before
end
local function shared_out(ws, wv, what)
  if mpi then truthy(ws < wv, what .. ": rank 0 wrote " .. ws .. " of " .. wv) else eq(ws, wv, what) end
end

local function listing(folder)
  local p = io.popen("ls -A '" .. folder .. "'")
  local s = p:read("a")
  p:close()
  return s
end

test("parallel_save.csv", function()
  for _, dt in ipairs({"f32", "f64", "i64", "bool"}) do
    local base = tp.arange(1, 103 * 4):reshape{103, 4} / 7 - 20
    if dt == "bool" then base = (tp.arange(1, 103 * 4):reshape{103, 4} % 3):eq(0) end
    local s, v = pair(by_rows(base:cast(dt)))
    local ws = written(function() tp.save_csv(s, path("s.csv"), {columns = {"a", "b,c", "d", "e"}}) end)
    local wv = written(function() tp.save_csv(v, path("v.csv"), {columns = {"a", "b,c", "d", "e"}}) end)
    shared_out(ws, wv, dt)
    eq(read_all(path("s.csv")) == read_all(path("v.csv")), true, dt .. ": the same text")
    same(tp.load_csv(path("s.csv"), {dtype = dt}), v, dt .. " read back")
  end
  -- 1-D, and a layout split by columns (stored again as blocks of rows before writing)
  local s1, v1 = pair(tp.arange(1, 50) * 3)
  tp.save_csv(s1, path("s1.csv"))
  tp.save_csv(v1, path("v1.csv"))
  eq(read_all(path("s1.csv")), read_all(path("v1.csv")))
  local sc, vc = pair(by_columns(tp.arange(1, 20 * 9):reshape{20, 9} * 2))
  tp.save_csv(sc, path("sc.tsv"))
  tp.save_csv(vc, path("vc.tsv"))
  eq(read_all(path("sc.tsv")), read_all(path("vc.tsv")))
  -- an expression: computed sharded, then written by the ranks that computed it
  tp.save_csv(tp.env.sharded * 1, path("e.tsv"))
  eq(read_all(path("e.tsv")), read_all(path("vc.tsv")))
  truthy(not listing(dir):find("partial", 1, true), listing(dir))
end)

-- Every chunk file of two stores, compared.
local function same_store(a, b, what)
  local names = listing(a)
  eq(names, listing(b), what .. ": the same chunk files")
  for name in names:gmatch("[^\n]+") do
    eq(read_all(a .. "/" .. name) == read_all(b .. "/" .. name), true, what .. ": " .. name)
  end
end

test("parallel_save.zarr", function()
  local s, v = pair(by_rows(tp.arange(1, 61 * 10):reshape{61, 10} / 3))
  -- grids that nest in 3 ranks' rows, straddle them, or cut the columns too
  for _, c in ipairs({{7, 10}, {4, 3}, {61, 10}, {1, 1}}) do
    local what = "chunks " .. c[1] .. "x" .. c[2]
    local ws = written(function() tp.save_zarr(s, path("s.zarr"), {chunks = c, compressor = "zlib"}) end)
    local wv = written(function() tp.save_zarr(v, path("v.zarr"), {chunks = c, compressor = "zlib"}) end)
    if c[1] < 61 then shared_out(ws, wv, what) end
    same_store(path("s.zarr"), path("v.zarr"), what)
    same(tp.load_zarr(path("s.zarr")), v, what)
  end
  -- the default grid follows the shards: a chunk per rank's rows here (61 rows of 40 bytes)
  tp.save_zarr(s, path("d.zarr"))
  local ranks = tp.mesh().ranks
  local meta = read_all(path("d.zarr") .. "/.zarray"):gsub("%s", "")
  truthy(meta:find('"chunks":[' .. math.ceil(61 / ranks) .. ',10]', 1, true), meta)
  same(tp.load_zarr(path("d.zarr")), v, "default grid")
  -- a column split, every dtype
  for _, dt in ipairs({"f64", "i32", "bool"}) do
    local sc, vc = pair(by_columns((tp.arange(1, 12 * 9):reshape{12, 9} % 5):cast(dt)))
    tp.save_zarr(sc, path("c.zarr"), {compressor = "blosc"})
    same(tp.load_zarr(path("c.zarr")), vc, dt .. " by columns")
  end
  -- replicated on every rank: the ranks take turns at the chunks
  local sr, vr = pair((tp.arange(1, 40 * 5):reshape{40, 5} * 3):constrain(tp.replicated()))
  local ws = written(function() tp.save_zarr(sr, path("r.zarr"), {chunks = {4, 5}}) end)
  local wv = written(function() tp.save_zarr(vr, path("rv.zarr"), {chunks = {4, 5}}) end)
  shared_out(ws, wv, "replicated")
  same_store(path("r.zarr"), path("rv.zarr"), "replicated")
  truthy(not listing(dir):find("partial", 1, true), listing(dir))
end)

test("parallel_save.hdf5_chunked", function()
  local s, v = pair(tp.arange(1, 50 * 6):reshape{50, 6}:cast("i64"))
  for _, c in ipairs({{7, 4}, {50, 6}, {1, 1}}) do
    tp.save_hdf5(s, path("s.h5"), "g/x", {chunks = c})
    same(tp.load_hdf5(path("s.h5"), "g/x"), v, "chunks " .. c[1] .. "x" .. c[2])
  end
  local sc, vc = pair(by_columns(tp.arange(1, 10 * 9):reshape{10, 9} / 4))
  tp.save_hdf5(sc, path("c.h5"), "x", {chunks = {3, 2}})
  same(tp.load_hdf5(path("c.h5"), "x"), vc, "a column split, chunks across its columns")
end)

test("parallel_save.safetensors", function()
  local s, v = pair(tp.arange(1, 40 * 3):reshape{40, 3}:cast("f64"))
  tp.save_safetensors({w = s, b = s[{{}, 1}] * 2}, path("s.safetensors"))
  tp.save_safetensors({w = v, b = v[{{}, 1}] * 2}, path("v.safetensors"))
  eq(read_all(path("s.safetensors")) == read_all(path("v.safetensors")), true, "the same bytes")
end)

os.execute("rm -rf '" .. dir .. "'")
check.summary()
