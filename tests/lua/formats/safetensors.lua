-- safetensors: round trips of every dtype, loading into tp.env, the bad inputs, and saves
-- that cannot tear. Runs on one rank, 3 virtual ranks and under mpirun -n 2 (the reference
-- files are checked by tests/formats/reference.py).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, mistake = check.test, check.eq, check.mistake

local dir, path = check.scratch_dir()

local read_all = check.read_file
local same = check.same_tensor

local function tensors()
  return {
    w = tp.arange(1, 40 * 6):reshape{40, 6} / 7,
    ["blocks.0.attn"] = tp.linspace(-1, 1, 24, {dtype = "f64"}):reshape{2, 3, 4},
    ids = tp.arange(-5, 30, {dtype = "i64"}),
    n = tp.arange(1, 12, {dtype = "i32"}):reshape{3, 4},
    mask = (tp.arange(1, 30):reshape{10, 3} % 3):eq(0),
    s = tp.tensor(3.5),
  }
end

test("safetensors.round_trip", function()
  local t = tensors()
  tp.save_safetensors(t, path("a.safetensors"), {metadata = {format = "pt", step = "10"}})
  local back, meta = tp.load_safetensors(path("a.safetensors"))
  eq(meta, {format = "pt", step = "10"})
  for k, x in pairs(t) do same(back[k], x, k) end
  eq(back.s.shape, {})
end)

test("safetensors.into_env", function()
  tp.env.blocks_0_attn = nil
  local back = tp.load_safetensors(path("a.safetensors"), {env = true})
  same(tp.env.blocks_0_attn, tensors()["blocks.0.attn"], "blocks.0.attn")
  eq(back["blocks.0.attn"].name, "blocks_0_attn")
  same(tp.env.w, tensors().w, "w")
  -- A named weight is sharded over the ranks like any loaded tensor: each rank read its rows.
  if tp.mesh().ranks > 1 then
    for _, r in ipairs(tp.tensors()) do
      if r.name == "w" then check.truthy(r.layout:find("split", 1, true), r.layout) end
    end
  end
  -- tp.env saves whole: every named tensor, under its name.
  tp.save_safetensors(tp.env, path("env.safetensors"))
  local e = tp.load_safetensors(path("env.safetensors"))
  same(e.w, tensors().w, "env w")
  same(e.ids, tensors().ids, "env ids")
end)

test("safetensors.dtype_option", function()
  local back = tp.load_safetensors(path("a.safetensors"), {dtype = "f64"})
  eq(back.ids.dtype, "f64")
  eq(back.ids:sum():item(), tensors().ids:sum():item())
end)

test("safetensors.bytes_read", function()
  tp.save_safetensors(tensors(), path("fresh.safetensors"))  -- a file no loaded tensor has read
  local before = tp.stats().bytes_read
  local t = tp.load_safetensors(path("fresh.safetensors"))
  eq(tp.stats().bytes_read, before, "a load reads nothing until observed")
  for _, x in pairs(t) do tp.eval(x) end
  -- Only the tensors' data is counted: 240*4 + 24*8 + 36*8 + 12*4 + 30 + 4 bytes, over all ranks
  -- on one process (rank 0's own under mpirun).
  local read = tp.stats().bytes_read - before
  if os.getenv("OMPI_COMM_WORLD_SIZE") then
    check.truthy(read > 0 and read < 1522, read)
  else
    eq(read, 1522)
  end
end)

-- A save that fails leaves the file it would have replaced as it was, and no temporary.
test("safetensors.failed_save_keeps_file", function()
  local before = read_all(path("a.safetensors"))
  local ok = pcall(tp.save_safetensors, {w = tp.ones{3}, bad = "x"}, path("a.safetensors"))
  check.truthy(not ok)
  -- A rank failing halfway (TAPESTRY_IO_FAULT, on 3 virtual ranks in a child): an error naming it.
  if tp.mesh().ranks == 1 and arg[-1] then
    local cmd = "TAPESTRY_RANKS=3 TAPESTRY_IO_FAULT=2 '" .. arg[-1] .. "' -e \"tp.save_safetensors("
      .. "{w = tp.arange(1, 300):reshape{100, 3}}, '" .. path("a.safetensors") .. "')\" 2>&1"
    local p = io.popen(cmd)
    local out = p:read("a")
    check.truthy(not p:close(), "the faulty save succeeded")
    check.truthy(out:find("rank 2", 1, true) and out:find("a.safetensors", 1, true), out)
  end
  eq(read_all(path("a.safetensors")) == before, true)
  local p = io.popen("ls '" .. dir .. "'")
  local listing = p:read("a")
  p:close()
  check.truthy(not listing:find("partial", 1, true), listing)
end)

mistake("safetensors.missing_file", function() tp.load_safetensors(path("none.safetensors")) end,
  "tp.load_safetensors", "none.safetensors", "cannot open")
mistake("safetensors.not_a_file", function()
  local f = io.open(path("junk"), "wb")
  f:write("\4\0\0\0\0\0\0\0[1] ")
  f:close()
  tp.load_safetensors(path("junk"))
end, "tp.load_safetensors", "junk", "not a safetensors file")
mistake("safetensors.bad_path", function() tp.load_safetensors(42) end,
  "bad argument #1 to 'tp.load_safetensors' (string expected")
mistake("safetensors.unknown_option", function() tp.load_safetensors(path("a.safetensors"), {nmae = 1}) end,
  "tp.load_safetensors", "nmae")
mistake("safetensors.not_a_table", function() tp.save_safetensors(tp.ones{2}, path("x.safetensors")) end,
  "bad argument #1 to 'tp.save_safetensors'")
mistake("safetensors.not_a_tensor", function() tp.save_safetensors({w = 3}, path("x.safetensors")) end,
  "tp.save_safetensors", "'w' is not a Tensor")
mistake("safetensors.bad_metadata", function()
  tp.save_safetensors({w = tp.ones{2}}, path("x.safetensors"), {metadata = {k = 1}})
end, "tp.save_safetensors", "metadata")
mistake("safetensors.env_collision", function()
  tp.save_safetensors({["a.b"] = tp.ones{2}, a_b = tp.ones{2}}, path("c.safetensors"))
  tp.load_safetensors(path("c.safetensors"), {env = true})
end, "tp.load_safetensors", "'a.b' and 'a_b' would both be tp.env.a_b")
mistake("safetensors.save_over_folder", function() tp.save_safetensors({w = tp.ones{2}}, dir) end,
  "tp.save_safetensors", "is a folder")

os.execute("rm -rf '" .. dir .. "'")
check.summary()
