-- http:// sources: .npy, safetensors, zarr and CSV loaded from a loopback HTTP server that answers
-- Range requests (range_server.py, started here), with each observation fetching only the
-- ranges it needs, counted by the server. Runs on one rank, 3 virtual ranks and mpirun -n 2.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, mistake = check.test, check.eq, check.mistake

local dir, path = check.scratch_dir()
local same = check.same_tensor
local here = arg[0]:match("^(.*)/") or "."

os.execute(string.format("python3 '%s/range_server.py' '%s' '%s' '%s' >/dev/null 2>&1 & echo $! > '%s'", here, dir,
  path("port"), path("count"), path("pid")))
local function read(p)
  local f = io.open(p)
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end
for _ = 1, 100 do
  if read(path("port")) then break end
  os.execute("sleep 0.1")
end
local url = "http://127.0.0.1:" .. assert(read(path("port")), "the range server did not start")
local function served() return tonumber(read(path("count"))) end

-- The body bytes the server sent during fn (every rank's requests).
local function fetches(want, fn, what)
  local before = served()
  fn()
  eq(served() - before, want, what)
end

local big = tp.arange(1, 200 * 50):reshape{200, 50}:cast("f32")

test("http.npy", function()
  tp.save(big, path("big.npy"))
  local x = tp.load(url .. "/big.npy")
  eq(x.shape, {200, 50})
  fetches(10 * 4, function() eq(x[{3, {1, 10}}]:sum():item(), 1055) end, "a row's 10")
  fetches(5 * 50 * 4, function() same(x[{{11, 15}}], big[{{11, 15}}], "rows") end, "5 rows")
  same(x * 2 + 1, big * 2 + 1, "whole")
end)

test("http.safetensors", function()
  tp.save_safetensors({a = big, b = big:cast("f64") * 3}, path("m.safetensors"))
  local m = tp.load_safetensors(url .. "/m.safetensors")
  fetches(8, function() eq(m.b[{200, 50}]:item(), 30000) end, "one element")
  same(m.a, big, "a")
end)

test("http.zarr", function()
  tp.save_zarr(big, path("z.zarr"), {chunks = {20, 10}, compressor = "zstd"})
  local z = tp.load_zarr(url .. "/z.zarr")
  same(z, big, "whole")
  -- a box inside one chunk fetches that chunk only (compressed: fewer bytes than its 800)
  local before = served()
  same(z[{{5, 8}, {1, 3}}], big[{{5, 8}, {1, 3}}], "box")
  local got = served() - before
  check.truthy(got > 0 and got <= 800, "one chunk: " .. got)
end)

test("http.csv", function()
  -- The load reads the text once (to find its rows); two rows then fetch only their span.
  tp.save_csv(big, path("t.csv"), {columns = nil})
  local f = io.open(path("t.csv"), "rb")
  local size = #f:read("a")
  f:close()
  local t
  fetches(size, function() t = tp.load_csv(url .. "/t.csv") end, "the index: the whole text once")
  local before = served()
  same(t[{{101, 102}}], big[{{101, 102}}], "two rows")
  local got = served() - before
  check.truthy(got > 0 and got < size / 4, "two rows fetched " .. got .. " of " .. size)
  same(t, big, "whole")
end)

mistake("http.not_found", function() tp.load(url .. "/none.npy") end, "tp.load", "none.npy", "not found (HTTP 404)")
mistake("http.no_server", function() tp.load("http://127.0.0.1:1/x.npy") end, "tp.load", "127.0.0.1:1/x.npy",
  "HTTP request failed")

os.execute("kill $(cat '" .. path("pid") .. "') 2>/dev/null")
os.execute("rm -rf '" .. dir .. "'")
check.summary()
