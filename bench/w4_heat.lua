-- W4: 2-D heat equation on 4096^2 f32, 50 explicit steps of u + 0.1 * laplacian5(u) with a
-- zero boundary (docs/benchmarks.md).  Each step reads and writes the grid once at best: 50 x 134 MB.
--   tapestry bench/w4_heat.lua            (BENCH_SMALL=1: 64^2, 3 steps, one run)
-- The loop evaluates every step, as a solver that looks at its state would; the 50 steps are
-- still one timed region that ends with the final grid computed.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local n = B.small and 64 or 4096
local steps = B.small and 3 or 50
local tag = arg[1] or "W4"   -- W8 reuses this script under tapestry -n N with its own tag
local lap = {{0, 1, 0}, {1, -4, 1}, {0, 1, 0}}

local median = B.time(function(i)
  return tp.eval(tp.rand({n, n}, {seed = 100 + i}))   -- fresh u0 per run
end, function(u)
  for _ = 1, steps do
    u = tp.eval(u + 0.1 * tp.stencil(u, lap))
  end
end)
B.report(tag, "tapestry", median, string.format("n=%d steps=%d ranks=%d", n, steps, B.ranks()))
