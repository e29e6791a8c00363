-- W5: einsum("ij,jk,kl->il") on 2048x64, 64x2048, 2048x64 f32 (docs/benchmarks.md).  The good order,
-- (jk,kl) first, never forms the 2048^2 intermediate: 3.4e7 flops.  bench/einsum/ has the
-- longer study (both orders, f64).
--   tapestry bench/w5_einsum.lua          (BENCH_SMALL=1: 64x8, one run)
local B = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local N, K = 2048, 64
if B.small then N, K = 64, 8 end

local median = B.time(function(i)
  local s = 100 + 3 * i
  return {tp.eval(tp.randn({N, K}, {seed = s}), tp.randn({K, N}, {seed = s + 1}),
                  tp.randn({N, K}, {seed = s + 2}))}
end, function(t)
  tp.eval(tp.einsum("ij,jk,kl->il", t[1], t[2], t[3]))
end)
B.report("W5", "tapestry", median, string.format("N=%d K=%d", N, K))
