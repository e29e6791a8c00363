-- W2: fused elementwise tanh(a * b + c) over three f32 vectors of 2^25 (docs/benchmarks.md).
-- One pass reads 3 x 128 MiB and writes 128 MiB: 537 MB of traffic, no intermediates.
--   tapestry bench/w2_elementwise.lua     (BENCH_SMALL=1: 2^12, one run)
local B = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local n = B.small and (1 << 12) or (1 << 25)

local b = tp.eval(tp.randn({n}, {seed = 2}))
local c = tp.eval(tp.randn({n}, {seed = 3}))

local median = B.time(function(i)
  return tp.eval(tp.randn({n}, {seed = 100 + i}))   -- a fresh a: a new graph every run
end, function(a)
  tp.eval((a * b + c):tanh())
end)
B.report("W2", "tapestry", median, string.format("n=%d", n))
