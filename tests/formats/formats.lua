-- The Lua half of reference.py: loads the reference tools' files, checks them against the
-- values they hold (want.*.npy), and writes out.* from those values for the tools to read.
--   tapestry formats.lua FORMAT DIR
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lua/lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local fmt, dir = arg[1], arg[2]
local names = {"layer.0.weight", "bias", "idx", "counts", "mask", "scale"}

local function want(name) return tp.load(dir .. "/want." .. name .. ".npy") end

-- Exactly equal: same dtype, shape and every value.
local function same(got, w, what)
  eq(got.dtype, w.dtype, what .. " dtype")
  eq(got.shape, w.shape, what .. " shape")
  check.truthy(got:eq(w):all():item(), what .. ": values differ")
end

local formats = {}

function formats.safetensors()
  test("safetensors.load_reference", function()
    local t, meta = tp.load_safetensors(dir .. "/ref.safetensors")
    eq(meta, {format = "pt", note = "hand-built"})
    for _, n in ipairs(names) do same(t[n], want(n), n) end
    local count = 0
    for _ in pairs(t) do count = count + 1 end
    eq(count, #names)
  end)
  test("safetensors.save_for_reference", function()
    local t = {}
    for _, n in ipairs(names) do t[n] = want(n) end
    t["layer.0.weight"] = t["layer.0.weight"] * 1  -- an expression, computed then written
    tp.save_safetensors(t, dir .. "/out.safetensors", {metadata = {writer = "tapestry"}})
  end)
end

function formats.csv()
  local x, k = want("x"), want("k")
  test("csv.text_column", function()
    check.check_error(function() tp.load_csv(dir .. "/ref.csv") end, "line 2, column 'label, text' (1)",
      "'row 0' is not a number")
  end)
  test("csv.load_reference", function()
    local t, names = tp.load_csv(dir .. "/ref.csv", {dtype = "f64", columns = {"a", "b", "c"}})
    eq(names, {"a", "b", "c"})
    eq(t.shape, {23, 3})
    -- NaN where the field is empty, every other value exactly (repr round-trips)
    check.truthy(t:ne(t):eq(x:ne(x)):all():item(), "NaNs")
    check.truthy(tp.logical_or(t:eq(x), x:ne(x)):all():item(), "values")
    local kk, kn = tp.load_csv(dir .. "/ref.csv", {columns = {5}, dtype = "i64"})
    eq(kn, {"k"})
    same(kk:reshape{23}, k, "k")
    local tsv, tn = tp.load_csv(dir .. "/ref.tsv", {dtype = "f64"})
    eq(tn, {"1", "2"})
    same(tsv[{{}, 1}]:cast("i64"), k, "tsv k")
    same(tsv[{{}, 2}], x[{{}, 1}], "tsv x")
  end)
  test("csv.save_for_reference", function()
    local out = tp.cat({x[{{}, {3, 3}}], x[{{}, {1, 1}}], k:cast("f64"):reshape{23, 1}}, 2)
    tp.save_csv(out, dir .. "/out.csv", {columns = {"c", 'a, "b"', "k"}})
    tp.save_csv(k, dir .. "/out.tsv")
  end)
end

function formats.sql()
  local db = dir .. "/ref.db"
  local ids, x = want("ids"), want("x")
  test("sql.load_reference", function()
    local t, names, skipped = tp.load_sql(db, "SELECT * FROM m ORDER BY id", {dtype = "f64"})
    eq(names, {"id", "x"})
    eq(skipped, {"label"})
    same(t[{{}, 1}]:cast("i64"), ids, "id")
    local v = t[{{}, 2}]
    check.truthy(v:ne(v):eq(x:ne(x)):all():item(), "NULL is NaN")
    check.truthy(tp.logical_or(v:eq(x), x:ne(x)):all():item(), "x")
    local i = tp.load_sql(db, "SELECT id FROM m ORDER BY id", {dtype = "i64"})
    same(i:reshape{17}, ids, "id as i64")
  end)
  test("sql.save_for_reference", function()
    tp.save_sql(ids, db, "out_ids", {columns = {"k"}})  -- i64: an INTEGER column
    tp.save_sql(tp.stack({ids:cast("f64"), x}, 2), db, "out", {columns = {"k", "value"}})
  end)
  test("sql.failed_append_keeps_table", function()
    check.check_error(function()
      tp.save_sql(tp.tensor({{2, 1}, {7, 1}}), db, "guard", {columns = {"a", "b"}, append = true})
    end, "tp.save_sql", "ref.db", "cannot insert row 2 into table 'guard'", "CHECK constraint failed")
  end)
end

function formats.hdf5()
  local f = dir .. "/ref.h5"
  test("hdf5.load_reference", function()
    local u, attrs = tp.load_hdf5(f, "grp/chunked")
    eq(attrs, {units = "K", step = 10, origin = {0.5, -1.5}})
    same(u, want("chunked"), "chunked")
    same(tp.load_hdf5(f, "/contig"), want("contig"), "contig")
    same(tp.load_hdf5(f, "flags"), want("flags"), "flags")
    same(tp.load_hdf5(f, "narrow"), want("narrow"), "narrow (int16 on disk)")
    same(tp.load_hdf5(f, "big_endian"), want("big_endian"), "big_endian")
    -- named: each rank reads its own rows (chunked by hyperslab, contiguous raw)
    same(tp.load_hdf5(f, "grp/chunked", {name = "u"}), want("chunked"), "named chunked")
    same(tp.load_hdf5(f, "contig", {name = "c"}), want("contig"), "named contig")
  end)
  test("hdf5.errors", function()
    check.check_error(function() tp.load_hdf5(f, "strings") end, "ref.h5', dataset 'strings'",
      "a dataset of HDF5 string type, which Tapestry cannot load")
    check.check_error(function() tp.load_hdf5(f, "u64") end, "ref.h5', dataset 'u64'",
      "an unsigned 64-bit integer dataset")
    local x = tp.load_hdf5(dir .. "/damaged.h5", "x")
    eq(x[{{1, 20}}]:sum():item(), 19900, "the chunks before the damaged one")
    check.check_error(function() return x[{{25, 26}}]:sum():item() end, "damaged.h5', dataset 'x', slice [25..26]x[1..10]",
      "the library cannot read it (")
  end)
  test("hdf5.save_for_reference", function()
    tp.save_hdf5(tp.env.u * 2, dir .. "/out.h5", "fields/u", {attrs = {units = "K", step = 10, origin = {0.5, -1.5}}})
    tp.save_hdf5(tp.env.c, dir .. "/out_chunked.h5", "c", {chunks = {4, 5}})
    tp.save_hdf5(want("flags"), dir .. "/out_flags.h5", "flags")
  end)
end

function formats.zarr()
  local function z(name) return dir .. "/" .. name .. ".zarr" end
  test("zarr.load_reference", function()
    local x, attrs = tp.load_zarr(z("blosc"))
    eq(attrs, {units = "K", step = 10, origin = {0.5, -1.5}})
    same(x, want("blosc"), "blosc")
    for _, n in ipairs({"zstd_f", "zlib", "gzip", "flags"}) do same(tp.load_zarr(z(n)), want(n), n) end
    local s = tp.load_zarr(z("sparse"))
    local w = want("sparse")
    check.truthy(tp.logical_or(s:eq(w), tp.logical_and(s:ne(s), w:ne(w))):all():item(), "fill_value")
    -- named: each rank decodes only the chunks holding its rows
    same(tp.load_zarr(z("blosc"), {name = "b"}), want("blosc"), "named blosc")
    same(tp.load_zarr(z("zstd_f"), {name = "f"}), want("zstd_f"), "named F order")
  end)
  test("zarr.save_for_reference", function()
    local x = tp.env.b * 2
    local attrs = {units = "K", step = 10, origin = {0.5, -1.5}}
    tp.save_zarr(x, z("out_zstd"), {chunks = {5, 11}, attrs = attrs})
    tp.save_zarr(x, z("out_zlib"), {chunks = {8, 3}, compressor = "zlib", level = 6})
    tp.save_zarr(x, z("out_gzip"), {compressor = "gzip"})
    tp.save_zarr(x, z("out_blosc"), {chunks = {7, 7}, compressor = "blosc"})
    tp.save_zarr(x, z("out_none"), {compressor = "none"})
    tp.save_zarr(want("flags"), z("out_flags"), {chunks = {4, 2}})
  end)
end

assert(formats[fmt], "unknown format " .. tostring(fmt))()
check.summary()
