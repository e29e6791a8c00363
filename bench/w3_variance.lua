-- W3: the variance of 2^26 f32 values (docs/benchmarks.md), observed as a Lua number.
-- x is 256 MiB; one read pass at ~20 GB/s (2 threads) is the limit, ~13 ms.
--   tapestry bench/w3_variance.lua        (BENCH_SMALL=1: 2^12, one run)
local B = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local n = B.small and (1 << 12) or (1 << 26)

local median = B.time(function(i)
  return tp.eval(tp.randn({n}, {seed = 100 + i}))
end, function(x)
  return x:var():item()
end)
B.report("W3", "tapestry", median, string.format("n=%d", n))
