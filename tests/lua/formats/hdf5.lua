-- HDF5: round trips of every dtype, contiguous and chunked, attributes, bytes read, saves
-- that cannot tear, and the bad inputs. Runs on one rank, 3 virtual ranks and under mpirun -n 2
-- (h5py's files are checked by tests/formats/reference.py).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, mistake = check.test, check.eq, check.mistake

local dir, path = check.scratch_dir()
local read_all = check.read_file
local same = check.same_tensor

test("hdf5.round_trip", function()
  local x = tp.arange(1, 37 * 4):reshape{37, 4} / 3 - 20
  for _, dt in ipairs({"f32", "f64", "i32", "i64", "bool"}) do
    local v = x:cast(dt)
    tp.save_hdf5(v, path("c.h5"), "d")
    same(tp.load_hdf5(path("c.h5"), "d"), v, dt .. " contiguous")
    tp.save_hdf5(v, path("k.h5"), "/g/h/d", {chunks = {8, 3}})
    same(tp.load_hdf5(path("k.h5"), "g/h/d", {name = "k"}), v, dt .. " chunked")
    same(tp.env.k, v, dt .. " named")
  end
  tp.save_hdf5(tp.tensor(2.5), path("s.h5"), "s")  -- 0-d
  eq(tp.load_hdf5(path("s.h5"), "s"):item(), 2.5)
end)

test("hdf5.attributes", function()
  tp.save_hdf5(tp.ones{3}, path("a.h5"), "x", {attrs = {units = "m/s", n = 7, dt = 0.25, v = {1, 2.5}}})
  local x, attrs = tp.load_hdf5(path("a.h5"), "x")
  eq(attrs, {units = "m/s", n = 7, dt = 0.25, v = {1, 2.5}})
  eq(x:sum():item(), 3)
end)

test("hdf5.bytes_read", function()
  tp.save_hdf5(tp.arange(1, 1000):reshape{100, 10}, path("b.h5"), "x", {chunks = {10, 10}})
  tp.save_hdf5(tp.arange(1, 1000):reshape{100, 10}, path("r.h5"), "x")
  for _, f in ipairs({"b.h5", "r.h5"}) do
    local before = tp.stats().bytes_read
    tp.load_hdf5(path(f), "x", {name = "y"})
    tp.eval(tp.env.y)  -- loads are lazy: read at the observation
    local read = tp.stats().bytes_read - before
    -- every rank reads only its rows: this process's ranks together read the data once
    if os.getenv("OMPI_COMM_WORLD_SIZE") then
      check.truthy(read > 0 and read < 4000, f .. ": " .. read)
    else
      eq(read, 4000, f)
    end
  end
end)

test("hdf5.failed_save_keeps_file", function()
  tp.save_hdf5(tp.ones{4, 4}, path("keep.h5"), "x")
  local before = read_all(path("keep.h5"))
  check.truthy(not pcall(tp.save_hdf5, tp.ones{4, 4}, path("keep.h5"), "x", {chunks = {1}}))
  check.truthy(not pcall(tp.save_hdf5, tp.ones{4, 4}, path("keep.h5"), "x", {attrs = {bad = true}}))
  if tp.mesh().ranks == 1 and arg[-1] then  -- a rank failing halfway, on 3 virtual ranks in a child
    local p = io.popen("TAPESTRY_RANKS=3 TAPESTRY_IO_FAULT=2 '" .. arg[-1] .. "' -e \"tp.save_hdf5("
      .. "tp.arange(1, 300):reshape{100, 3}, '" .. path("keep.h5") .. "', 'x')\" 2>&1")
    local out = p:read("a")
    check.truthy(not p:close(), "the faulty save succeeded")
    check.truthy(out:find("rank 2", 1, true) and out:find("keep.h5", 1, true), out)
  end
  eq(read_all(path("keep.h5")) == before, true)
  local p = io.popen("ls '" .. dir .. "'")
  local listing = p:read("a")
  p:close()
  check.truthy(not listing:find("partial", 1, true), listing)
end)

mistake("hdf5.missing_file", function() tp.load_hdf5(path("none.h5"), "x") end, "tp.load_hdf5", "none.h5")
mistake("hdf5.not_hdf5", function()
  local f = io.open(path("junk.h5"), "wb")
  f:write("not hdf5")
  f:close()
  tp.load_hdf5(path("junk.h5"), "x")
end, "tp.load_hdf5", "junk.h5", "not an HDF5 file")
mistake("hdf5.missing_dataset", function() tp.load_hdf5(path("a.h5"), "nope") end, "tp.load_hdf5",
  "a.h5', dataset 'nope': no such dataset (the file holds: x)")
mistake("hdf5.dataset_type", function() tp.load_hdf5(path("a.h5"), 3) end, "bad argument #2 to 'tp.load_hdf5'")
mistake("hdf5.bad_chunks", function() tp.save_hdf5(tp.ones{4, 4}, path("x.h5"), "x", {chunks = {2}}) end,
  "bad argument #4 to 'tp.save_hdf5'", "one size per dimension of shape {4,4}")
mistake("hdf5.bad_attr", function() tp.save_hdf5(tp.ones{2}, path("x.h5"), "x", {attrs = {a = {}}}) end,
  "bad argument #4 to 'tp.save_hdf5'", "attribute 'a'")
mistake("hdf5.empty_dataset_name", function() tp.save_hdf5(tp.ones{2}, path("x.h5"), "") end, "tp.save_hdf5",
  "dataset name is empty")
mistake("hdf5.save_folder", function() tp.save_hdf5(tp.ones{2}, dir, "x") end, "tp.save_hdf5", "is a folder")

os.execute("rm -rf '" .. dir .. "'")
check.summary()
