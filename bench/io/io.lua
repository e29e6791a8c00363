-- Load and save bandwidth of each format (bench/io/run compares them with dd's).
--   tapestry bench/io/io.lua DIR [MiB]        -- prints "RESULT IO <format> <save|load> <GB/s>"
-- A file of MiB mebibytes of f32 per format: the median of BENCH_REPS saves, then of loads (named
-- loads, so on N ranks each rank reads its own rows; the page cache is warm for both, as for dd).
-- CSV is text (about 2.5 bytes of it per byte of f32 here): its tensor is a 16th of the size,
-- and its GB/s are of the tensor's bytes, formatted or parsed.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "../common.lua")
local dir = assert(arg[1], "usage: io.lua DIR [MiB]")
local mib = tonumber(arg[2] or "") or (B.small and 1 or 256)
local cols = 1024
local rows = mib * 1024 * 1024 // (4 * cols)
local x = tp.eval(tp.rand({rows, cols}, {seed = 1}))
local bytes = rows * cols * 4
local xs = tp.eval(x[{{1, math.max(1, rows // 16)}}] * 1)  -- CSV's smaller tensor
local small_bytes = math.max(1, rows // 16) * cols * 4

local formats = {
  npy = {save = function(p) tp.save(x, p) end, load = function(p) tp.eval(tp.load(p, {name = "y"})) end},
  safetensors = {
    save = function(p) tp.save_safetensors({x = x}, p) end,
    load = function(p) tp.eval(tp.load_safetensors(p).x) end,
  },
  hdf5 = {
    save = function(p) tp.save_hdf5(x, p, "x") end,
    load = function(p) tp.eval((tp.load_hdf5(p, "x", {name = "y"}))) end,
  },
  hdf5_chunked = {
    save = function(p) tp.save_hdf5(x, p, "x", {chunks = {64, cols}}) end,
    load = function(p) tp.eval((tp.load_hdf5(p, "x", {name = "y"}))) end,
  },
  zarr = {  -- uncompressed 1 MiB chunks
    save = function(p) tp.save_zarr(x, p, {compressor = "none", chunks = {256, cols}}) end,
    load = function(p) tp.eval((tp.load_zarr(p, {name = "y"}))) end,
  },
  zarr_zstd = {  -- zstd level 3 (random floats hardly compress: this is the codec's cost)
    save = function(p) tp.save_zarr(x, p, {compressor = "zstd", chunks = {256, cols}}) end,
    load = function(p) tp.eval((tp.load_zarr(p, {name = "y"}))) end,
  },
  csv = {
    save = function(p) tp.save_csv(xs, p) end,
    load = function(p) tp.eval((tp.load_csv(p, {name = "y"}))) end,
  },
}
-- Loads are lazy and a load of an unchanged file is the same tensor: drop every handle after
-- each repetition, so the next one reads the file again instead of reusing the value.
local function fresh(load)
  return function(p)
    load(p)
    tp.env.y = nil
    collectgarbage()
  end
end
for _, name in ipairs({"npy", "safetensors", "hdf5", "hdf5_chunked", "zarr", "zarr_zstd", "csv"}) do
  local f, p = formats[name], dir .. "/bench." .. name
  local n = name == "csv" and small_bytes or bytes
  local save = B.time(function() return nil end, function() f.save(p) end)
  local load = B.time(function() return nil end, function() fresh(f.load)(p) end)
  print(string.format("RESULT IO %s save %.3f GB/s", name, n / save / 1e9))
  print(string.format("RESULT IO %s load %.3f GB/s", name, n / load / 1e9))
  if name == "npy" then  -- one row of the file: only its bytes are read
    local read0 = tp.stats().bytes_read
    local row = B.time(function() return nil end, fresh(function() tp.eval(tp.load(p)[{rows // 2}]) end))
    print(string.format("RESULT IO npy one_row %.6f s %d bytes read a time", row,
      (tp.stats().bytes_read - read0) // (B.reps + 1)))  -- B.time runs one warm-up
  end
  os.execute("rm -rf '" .. p .. "'")
end
