-- Indexing timings (docs/indexing.md): gather, scatter_add and x[mask] on an n x n f64 tensor,
-- best of 5; numpy's equivalents are bench/indexing_numpy.py. Usage: tapestry bench/indexing.lua [n]
local n = tonumber(arg and arg[1]) or 2048
local xs = {}
for k = 1, 5 do xs[k] = tp.eval(tp.rand({n, n}, {seed = 10 + k, dtype = "f64"})) end
local idx = tp.eval(tp.randint(1, n, {n, n}, {seed = 2}))
local src = tp.eval(tp.rand({n, n}, {seed = 3, dtype = "f64"}))
local function best(f)
  local b = math.huge
  for k = 1, 5 do local t = tp.clock(); f(xs[k]); b = math.min(b, tp.clock() - t) end
  return b
end
local r = os.getenv("TAPESTRY_RANKS") or "1"
print(("%s rank(s): gather %dx%d f64 dim 2: %.1f ms"):format(r, n, n, 1e3 * best(function(x) tp.eval(tp.gather(x, 2, idx)) end)))
print(("%s rank(s): scatter_add %dx%d f64 dim 2: %.1f ms"):format(r, n, n, 1e3 * best(function(x) tp.eval(tp.scatter_add(x, 2, idx, src)) end)))
print(("%s rank(s): x[x > 0.5] %dx%d f64: %.1f ms"):format(r, n, n, 1e3 * best(function(x) tp.eval(x[x:gt(0.5)]) end)))
