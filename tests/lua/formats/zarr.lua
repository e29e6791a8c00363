-- zarr v2: round trips of every dtype and compressor, chunk grids that do not match the ranks'
-- rows, attributes, saves that swap in whole, and the bad inputs. Runs on one rank, 3 virtual
-- ranks and under mpirun -n 2 (the zarr package's stores are checked by tests/formats/reference.py).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, mistake = check.test, check.eq, check.mistake

local dir, path = check.scratch_dir()

local same = check.same_tensor

test("zarr.round_trip", function()
  local x = tp.arange(1, 31 * 7):reshape{31, 7} / 3 - 20
  for _, dt in ipairs({"f32", "f64", "i32", "i64", "bool"}) do
    for _, comp in ipairs({"zstd", "zlib", "gzip", "blosc", "none"}) do
      local v = x:cast(dt)
      tp.save_zarr(v, path("r.zarr"), {chunks = {4, 3}, compressor = comp})
      same(tp.load_zarr(path("r.zarr")), v, dt .. " " .. comp)
      same(tp.load_zarr(path("r.zarr"), {name = "r"}), v, dt .. " " .. comp .. " named")
    end
  end
  tp.save_zarr(tp.tensor(4.5), path("s.zarr"))  -- 0-d: one chunk named "0"
  eq(tp.load_zarr(path("s.zarr")):item(), 4.5)
end)

test("zarr.attributes_and_replace", function()
  tp.save_zarr(tp.ones{3, 2}, path("a.zarr"), {attrs = {units = "m", n = 3, v = {1, 2.5}}})
  local x, attrs = tp.load_zarr(path("a.zarr"))
  eq(attrs, {units = "m", n = 3, v = {1, 2.5}})
  eq(x:sum():item(), 6)  -- loads are lazy: read it before the store is replaced
  tp.save_zarr(tp.zeros{5}, path("a.zarr"))  -- swapped in whole: no old chunk or attribute stays
  local y, attrs2 = tp.load_zarr(path("a.zarr"))
  eq(y.shape, {5})
  eq(attrs2, {})
end)

test("zarr.bytes_read", function()
  -- 100 rows in chunks of 10 rows, uncompressed: the ranks together read every chunk once
  -- when the rows split on chunk boundaries, and a chunk twice where two ranks share it.
  tp.save_zarr(tp.arange(1, 1000):reshape{100, 10}, path("b.zarr"), {chunks = {10, 10}, compressor = "none"})
  local before = tp.stats().bytes_read
  tp.load_zarr(path("b.zarr"), {name = "y"})
  eq(tp.stats().bytes_read, before, "a load reads nothing until observed")
  tp.eval(tp.env.y)
  local read = tp.stats().bytes_read - before
  local ranks = tp.mesh().ranks
  if os.getenv("OMPI_COMM_WORLD_SIZE") then
    eq(read, 2000)  -- rank 0's 50 rows: 5 chunks of 400 bytes
  elseif ranks == 3 then
    eq(read, 4000 + 2 * 400)  -- rows 34 and 67 start mid-chunk: two chunks read by two ranks
  else
    eq(read, 4000)
  end
end)

test("zarr.failed_save_keeps_store", function()
  tp.save_zarr(tp.ones{4}, path("keep.zarr"))
  check.truthy(not pcall(tp.save_zarr, tp.ones{4}, path("keep.zarr"), {compressor = "lzma"}))
  check.truthy(not pcall(tp.save_zarr, tp.ones{4}, path("keep.zarr"), {attrs = {bad = true}}))
  same(tp.load_zarr(path("keep.zarr")), tp.ones{4}, "kept")
  local p = io.popen("ls '" .. dir .. "'")
  local listing = p:read("a")
  p:close()
  check.truthy(not listing:find("partial", 1, true), listing)
end)

local function write(name, text)
  os.execute("mkdir -p '" .. path(name) .. "'")
  local f = assert(io.open(path(name) .. "/.zarray", "wb"))
  f:write(text)
  f:close()
end
write("u16.zarr", '{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<u2", "compressor": null, '
  .. '"fill_value": 0, "order": "C", "filters": null}')
write("lzma.zarr", '{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<f4", "compressor": {"id": "lzma"}, '
  .. '"fill_value": 0, "order": "C", "filters": null}')
write("junk.zarr", "{")
write("bad_chunk.zarr", '{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<f4", "compressor": '
  .. '{"id": "zstd", "level": 1}, "fill_value": 0, "order": "C", "filters": null}')
do
  local f = io.open(path("bad_chunk.zarr") .. "/0", "wb")
  f:write("garbage")
  f:close()
end
os.execute("mkdir -p '" .. path("plain") .. "'")

mistake("zarr.missing", function() tp.load_zarr(path("none.zarr")) end, "tp.load_zarr", "none.zarr", "no .zarray")
mistake("zarr.dtype", function() tp.load_zarr(path("u16.zarr")) end, "dtype '<u2' is not one Tapestry reads")
mistake("zarr.compressor", function() tp.load_zarr(path("lzma.zarr")) end, "compressor 'lzma' is not supported")
mistake("zarr.malformed", function() tp.load_zarr(path("junk.zarr")) end, "junk.zarr", "malformed .zarray")
mistake("zarr.bad_chunk", function() tp.eval((tp.load_zarr(path("bad_chunk.zarr")))) end, "bad_chunk.zarr",
  "chunk 0 does not decode with zstd")
mistake("zarr.bad_compressor_option", function() tp.save_zarr(tp.ones{2}, path("x.zarr"), {compressor = "lzma"}) end,
  "bad argument #3 to 'tp.save_zarr'", "'lzma'")
mistake("zarr.bad_level", function() tp.save_zarr(tp.ones{2}, path("x.zarr"), {compressor = "zlib", level = 12}) end,
  "option 'level' must be 0 to 9 for zlib, got 12")
mistake("zarr.bad_chunks", function() tp.save_zarr(tp.ones{2, 2}, path("x.zarr"), {chunks = {0, 1}}) end,
  "bad argument #3 to 'tp.save_zarr'", "chunks")
mistake("zarr.not_a_store", function() tp.save_zarr(tp.ones{2}, path("plain")) end, "tp.save_zarr", "plain",
  "is not a zarr array")

os.execute("rm -rf '" .. dir .. "'")
check.summary()
