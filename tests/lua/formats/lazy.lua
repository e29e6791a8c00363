-- Lazy loads: tp.load, load_hdf5, load_zarr and load_safetensors read nothing until observed,
-- then only the boxes the observation needs; a file changed under a load is an error, not a
-- mix of two versions. Runs on one rank, 3 virtual ranks and under mpirun -n 2.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, truthy = check.test, check.eq, check.truthy

local dir, path = check.scratch_dir()
local same = check.same_tensor
local mpi = os.getenv("OMPI_COMM_WORLD_SIZE") ~= nil

-- Bytes read by fn's observation: exactly `want` here; under mpirun only this process's ranks
-- count (tp.stats), so at most `want`.
local function reads(want, fn, what)
  local before = tp.stats().bytes_read
  fn()
  local got = tp.stats().bytes_read - before
  if mpi then truthy(got <= want, what .. ": read " .. got .. " > " .. want) else eq(got, want, what) end
end

local big = tp.arange(1, 200 * 50):reshape{200, 50}:cast("f32")

test("lazy.nothing_until_observed", function()
  tp.save(big, path("big.npy"))
  local x
  reads(0, function() x = tp.load(path("big.npy")) end, "load")
  eq(x.shape, {200, 50})
  reads(10 * 4, function() eq(x[{3, {1, 10}}]:sum():item(), 1055) end, "a row's 10")
end)

test("lazy.slices_read_their_box", function()
  local x = tp.load(path("big.npy"))
  reads(5 * 3 * 4, function() same(x[{{11, 15}, {2, 4}}], big[{{11, 15}, {2, 4}}], "box") end, "5x3 box")
  -- strided and reversed slices read their bounding box, then step through it
  same(x[{{1, 200, 7}, {50, 1, -3}}], big[{{1, 200, 7}, {50, 1, -3}}], "strided")
  same(tp.flip(x, 1)[{{1, 4}}], big[{{197, 200}}]:flip(1), "flipped")
  same(x * 2 + 1, big * 2 + 1, "whole")
end)

test("lazy.every_format", function()
  tp.save_hdf5(big, path("c.h5"), "d")
  tp.save_hdf5(big, path("k.h5"), "d", {chunks = {20, 10}})
  tp.save_zarr(big, path("z.zarr"), {chunks = {20, 10}, compressor = "none"})
  tp.save_safetensors({a = big, b = big:cast("f64") * 3}, path("m.safetensors"))
  local c = tp.load_hdf5(path("c.h5"), "d")
  local k = tp.load_hdf5(path("k.h5"), "d")
  local z = tp.load_zarr(path("z.zarr"))
  local m = tp.load_safetensors(path("m.safetensors"))
  reads(4 * 3 * 4, function() same(c[{{5, 8}, {1, 3}}], big[{{5, 8}, {1, 3}}], "hdf5 contiguous") end, "hdf5")
  same(k[{{5, 8}, {1, 3}}], big[{{5, 8}, {1, 3}}], "hdf5 chunked")
  -- a zarr box inside one uncompressed 20x10 chunk decodes that chunk only
  reads(20 * 10 * 4, function() same(z[{{5, 8}, {1, 3}}], big[{{5, 8}, {1, 3}}], "zarr") end, "zarr")
  reads(8, function() eq(m.b[{200, 50}]:item(), 30000) end, "safetensors one element")
  same(m.a, big, "safetensors a")
end)

test("lazy.changed_file_is_an_error", function()
  tp.save(big, path("ch.npy"))
  local x = tp.load(path("ch.npy"))
  tp.save(big * 0, path("ch.npy"))  -- rewritten (a new file renamed over it)
  check.check_error(function() return x:sum():item() end, "ch.npy", "changed since it was loaded")
  eq(tp.load(path("ch.npy")):sum():item(), 0, "a fresh load reads the new data")
end)

test("lazy.named_load_shards", function()
  tp.save(big, path("n.npy"))
  tp.load(path("n.npy"), {name = "lz"})
  same(tp.env.lz, big, "named")
  os.remove(path("n.npy"))  -- stored once observed: the file is no longer needed
  eq(tp.env.lz:sum():item(), big:sum():item(), "after the file is gone")
end)

os.execute("rm -rf '" .. dir .. "'")
check.summary()
