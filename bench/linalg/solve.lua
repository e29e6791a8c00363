-- A 4096 x 4096 f64 solve (LAPACK dgesv through LAPACKE/OpenBLAS), the linear algebra of
-- issue 24: x = linalg.solve(a, b) with a diagonally dominant a and a vector b, then checked.
--   tapestry bench/linalg/solve.lua [n]        (BENCH_SMALL=1: n = 64, one timed run)
-- bench/linalg/run times numpy's np.linalg.solve on the same system in the same run.
-- Each run solves fresh values (a new seed): an identical expression would read back the value
-- computed the first time. The inputs are computed before the clock starts; the timed part is
-- building, planning and running the solve, and bringing x (n values) to rank 0.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "../common.lua")
local linalg = require "tapestry.linalg"
local n = tonumber(arg[1] or "") or (B.small and 64 or 4096)
B.reps = tonumber(os.getenv("BENCH_REPS") or "") or (B.small and 1 or 3)  -- a solve is seconds

local residual
local median = B.time(function(i)
  local a = tp.rand({n, n}, {seed = 200 + i, dtype = "f64"}) + tp.eye(n, {dtype = "f64"}) * n
  local b = tp.rand({n}, {seed = 300 + i, dtype = "f64"})
  tp.eval(a, b)
  return {a, b}
end, function(ab)
  local x = linalg.solve(ab[1], ab[2])
  tp.eval(x)
  residual = (ab[1]:matmul(x) - ab[2]):abs():max()
  return x
end)
-- The check is outside the clock: |a x - b| is at rounding level for this well-conditioned a.
assert(residual:item() < 1e-9, "solve residual " .. residual:item())
B.report("SOLVE" .. n, "tapestry", median, string.format("n=%d f64 ranks=%d reps=%d", n, B.ranks(), B.reps))
