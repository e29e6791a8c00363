-- W6: 1000 conjugate-gradient iterations on a 256 x 256 SPD system (docs/benchmarks.md): per
-- iteration one matvec, two dots, three axpys, and two scalars observed (p.Ap and r.r).
-- The arithmetic is ~0.3 MFLOP an iteration, so this measures the cost of one observation:
-- building a small graph, finding its plan, running a few tiny kernels, returning a number.
--   tapestry bench/w6_cg.lua              (BENCH_SMALL=1: 20 iterations, one run)
--   W6_ITERS=250 BENCH_REPS=1 tapestry bench/w6_cg.lua   (two runs of 250: bench/w6_callgrind.sh)
--   W6_N=16 tapestry bench/w6_cg.lua      (a 16 x 16 system: what an iteration costs besides the matvec)
-- A fixed count of iterations, not a tolerance, so every engine does the same work (in f32
-- the residual reaches 0 long before 1000 iterations; dividing by at least TINY keeps the
-- iterates finite after that, in every engine alike).
local TINY = 1e-30
local B = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local n = tonumber(os.getenv("W6_N") or "") or 256
local iters = tonumber(os.getenv("W6_ITERS") or "") or (B.small and 20 or 1000)

-- A = M M^T / n + I: symmetric positive definite, eigenvalues >= 1.
local m = tp.randn({n, n}, {seed = 1})
local A = tp.eval(m:matmul(m:t()) / n + tp.eye(n))

local median = B.time(function(i)
  return tp.eval(tp.randn({n}, {seed = 100 + i}))   -- a fresh right-hand side per run
end, function(b)
  local x = tp.zeros({n})
  local r, p = b, b
  local rr = (r * r):sum():item()
  for _ = 1, iters do
    local Ap = A:matmul(p)
    local alpha = rr / math.max((p * Ap):sum():item(), TINY)            -- observation 1
    x = tp.eval(x + alpha * p)
    r = tp.eval(r - alpha * Ap)
    local rr_new = (r * r):sum():item()             -- observation 2
    p = tp.eval(r + (rr_new / math.max(rr, TINY)) * p)
    rr = rr_new
  end
  return x
end)
B.report("W6", "tapestry", median, string.format("n=%d iters=%d", n, iters))
