-- W1: a linear layer relu(x @ w + b), x and w 4096 x 4096 f32, b 4096 (docs/benchmarks.md).
-- 2 * 4096^3 = 137 GFLOP in the matmul; the bias and relu fold into one elementwise pass.
--   tapestry bench/w1_linear.lua          (BENCH_SMALL=1: 256 x 256, one run)
local B = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local n = B.small and 256 or 4096
local tag = arg[1] or "W1"   -- W8 reuses this script under tapestry -n N with its own tag

-- w and b stay; x is fresh every run, so x @ w is a new node (no cached value).
local w = tp.eval(tp.randn({n, n}, {seed = 2}) / math.sqrt(n))
local b = tp.eval(tp.randn({n}, {seed = 3}))

local median = B.time(function(i)
  return tp.eval(tp.randn({n, n}, {seed = 100 + i}))
end, function(x)
  -- Observing one element would let a lazy engine skip work; tp.eval computes the whole
  -- output and returns it backed by data, as numpy's result is.
  tp.eval((x:matmul(w) + b):relu())
end)
B.report(tag, "tapestry", median, string.format("n=%d ranks=%d", n, B.ranks()))
