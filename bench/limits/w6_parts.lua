-- W6's iteration in parts (docs/performance.md, "W6: the Lua floor"): the loop of
-- bench/w6_cg.lua three ways, on the same system:
--   build  every Tensor operation of an iteration, nothing observed (the scalars are numbers
--          that change each iteration, as alpha and beta do, small enough that no value
--          overflows or turns subnormal in 1000 iterations; x, r and p stay lazy chains)
--   evals  the same plus the three tp.eval (x, r, p computed each iteration), no :item()
--   full   W6 itself: the three tp.eval and the two :item()
-- so build - Lua floor (w6_lua_floor.lua) is what making the nodes and Tensors costs, and each
-- step up adds what those observations cost.
--   tapestry bench/limits/w6_parts.lua          (W6_N=16: a 16 x 16 system, kernels ~free)
-- Prints "PART <part> <seconds> n=<n> iters=<iters>", the best of 7 runs each. BENCH_SMALL=1:
-- 10 iterations, one run.
local small = os.getenv("BENCH_SMALL") == "1"
local n = tonumber(os.getenv("W6_N") or "") or 256
local iters = small and 10 or 1000
local runs = small and 1 or 7
local TINY = 1e-30

local m = tp.randn({n, n}, {seed = 1})
local A = tp.eval(m:matmul(m:t()) / n + tp.eye(n))

-- build and evals: W6's operations with scalars that do not come from the data; `eval` is
-- tp.eval (evals) or returns its argument (build).
local function unobserved(b, eval)
  local x = tp.zeros({n})
  local r, p = b, b
  for i = 1, iters do
    local Ap = A:matmul(p)
    local _ = (p * Ap):sum()
    local alpha = 1e-3 + i * 1e-12
    x = eval(x + alpha * p)
    r = eval(r - alpha * Ap)
    local _ = (r * r):sum()
    p = eval(r + (1e-3 + i * 1e-12) * p)
  end
  return x
end

local loops = {}
function loops.build(b) return unobserved(b, function(t) return t end) end
function loops.evals(b) return unobserved(b, tp.eval) end
function loops.full(b)  -- bench/w6_cg.lua's loop
  local x = tp.zeros({n})
  local r, p = b, b
  local rr = (r * r):sum():item()
  for _ = 1, iters do
    local Ap = A:matmul(p)
    local alpha = rr / math.max((p * Ap):sum():item(), TINY)
    x = tp.eval(x + alpha * p)
    r = tp.eval(r - alpha * Ap)
    local rr_new = (r * r):sum():item()
    p = tp.eval(r + (rr_new / math.max(rr, TINY)) * p)
    rr = rr_new
  end
  return x
end

for _, part in ipairs({"build", "evals", "full"}) do
  local best = math.huge
  for i = 0, runs do  -- run 0 warms up
    local b = tp.eval(tp.randn({n}, {seed = 100 + i}))
    collectgarbage()
    collectgarbage()
    local t0 = tp.clock()
    loops[part](b)
    local t = tp.clock() - t0
    if i > 0 then best = math.min(best, t) end
  end
  print(string.format("PART %s %.6g n=%d iters=%d", part, best, n, iters))
end
