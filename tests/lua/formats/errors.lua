-- Errors of every format name the file, the dataset or tensor, the slice being read and (on
-- several ranks) the rank: a truncated file, a type Tapestry has no dtype for, a missing file,
-- a folder where a file should be, a damaged chunk found only when a slice is read. Runs on one
-- rank, 3 virtual ranks and under mpirun -n 2 (a rank's own failure: tests/formats/fault.lua).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local mistake = check.mistake

local dir, path = check.scratch_dir()
local function write(name, bytes)
  local f = assert(io.open(path(name), "wb"))
  f:write(bytes)
  f:close()
end
local function cut(name, keep)  -- keeps the first `keep` fraction of a file
  local s = check.read_file(path(name))
  write(name, s:sub(1, math.floor(#s * keep)))
end

-- HDF5: a file cut short, a folder, a missing file, a file rewritten under a lazy load.
tp.save_hdf5(tp.arange(1, 4000):reshape{1000, 4}, path("cut.h5"), "x")
cut("cut.h5", 0.5)
mistake("errors.hdf5_truncated", function() tp.load_hdf5(path("cut.h5"), "x") end, "tp.load_hdf5", "cut.h5",
  "cannot open the HDF5 file for reading (truncated file")
mistake("errors.hdf5_folder", function() tp.load_hdf5(dir, "x") end, "tp.load_hdf5", "not a regular file")
mistake("errors.hdf5_missing", function() tp.load_hdf5(path("none.h5"), "x") end, "tp.load_hdf5", "none.h5",
  "No such file or directory")
tp.save_hdf5(tp.arange(1, 4000):reshape{1000, 4}, path("k.h5"), "g/x", {chunks = {10, 4}})
mistake("errors.hdf5_changed", function()
  local x = tp.load_hdf5(path("k.h5"), "g/x")
  tp.save_hdf5(tp.ones{1000, 4}, path("k.h5"), "g/x", {chunks = {10, 4}})
  return x[{{500, 510}}]:sum():item()
end, "k.h5", "changed since it was loaded")

-- safetensors built by hand: a tensor whose bytes the file does not hold, a dtype we lack.
local function safetensors(name, header, data)
  write(name, string.pack("<I8", #header) .. header .. data)
end
safetensors("cut.safetensors", '{"w": {"dtype": "F32", "shape": [100], "data_offsets": [0, 400]}}', ("\0"):rep(40))
safetensors("u16.safetensors", '{"w": {"dtype": "U16", "shape": [2], "data_offsets": [0, 4]}}', ("\0"):rep(4))
mistake("errors.safetensors_truncated", function() tp.load_safetensors(path("cut.safetensors")) end,
  "tp.load_safetensors", "cut.safetensors", "tensor 'w': truncated")
mistake("errors.safetensors_dtype", function() tp.load_safetensors(path("u16.safetensors")) end,
  "tp.load_safetensors", "u16.safetensors", "tensor 'w': dtype U16 is not one Tapestry has")

-- .npy: a file cut short after its lazy load is a changed file; before, a truncated one.
tp.save(tp.arange(1, 400):reshape{100, 4}, path("a.npy"))
mistake("errors.npy_changed", function()
  local x = tp.load(path("a.npy"))
  cut("a.npy", 0.5)
  return x:sum():item()
end, "a.npy", "changed since it was loaded")
mistake("errors.npy_truncated", function() tp.load(path("a.npy")) end, "tp.load", "a.npy", "truncated")

-- zarr: a damaged chunk is found by the read that needs it, which names the store, the slice
-- and the chunk; slices that need other chunks still read.
tp.save_zarr(tp.arange(1, 400):reshape{100, 4}, path("z.zarr"), {chunks = {10, 4}, compressor = "none"})
write("z.zarr/3.0", "abc")
mistake("errors.zarr_damaged_chunk", function()
  local z = tp.load_zarr(path("z.zarr"))
  check.eq(z[{{1, 10}}]:sum():item(), 820, "another chunk")
  return z[{{31, 35}}]:sum():item()
end, "z.zarr", "slice [31..35]x[1..4]", "chunk 3.0 holds 3 bytes, not 160")

-- SQLite and CSV: a database or table that is not there.
mistake("errors.sql_missing", function() tp.load_sql(path("none.db"), "SELECT 1") end, "tp.load_sql", "none.db",
  "no such file")
mistake("errors.csv_folder", function() tp.load_csv(dir) end, "tp.load_csv", "not a regular file")

os.execute("rm -rf '" .. dir .. "'")
check.summary()
