-- Weak and strong scaling of a matmul and a 5-point stencil over the ranks (docs/performance.md,
-- "Scaling"); run by bench/scaling.sh under -n 1, 2 and 4.
--   tapestry -n 2 bench/scaling.lua matmul strong
-- Inputs and results are named tensors (tp.env), so they stay sharded on the ranks between
-- observations: what is timed is planning, moving slices and computing, not gathering to rank 0.
-- strong: the same problem on every rank count.  weak: the rows grow with the ranks, so each
-- rank's share of the work stays the same.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local workload, mode = arg[1] or "matmul", arg[2] or "strong"
local ranks = B.ranks()
local grow = mode == "weak" and ranks or 1
local lap = {{0, 1, 0}, {1, -4, 1}, {0, 1, 0}}

local median, note
if workload == "matmul" then
  -- C = A B with A {m, k}, B {k, n}: 2 m k n flops; strong m = 1536, weak m = 768 per rank.
  local k, n = 1536, 1536
  local m = B.small and 64 or (mode == "weak" and 768 * grow or 1536)
  if B.small then k, n = 64, 64 end
  median = B.time(function(i)
    tp.env.a = tp.rand({m, k}, {seed = 10 + i})
    tp.env.b = tp.rand({k, n}, {seed = 50 + i})
    tp.eval()
  end, function()
    local c = tp.env.a:matmul(tp.env.b)
    -- Left alone, the planner computes this matmul whole on one rank (its cost model finds the
    -- split not worth the moves); rows split over the ranks is what scales. SCALING_FREE=1: its choice.
    if ranks > 1 and os.getenv("SCALING_FREE") ~= "1" then c = c:constrain(tp.split(1)) end
    tp.env.c = c
    tp.eval()
  end)
  note = string.format("m=%d k=%d n=%d gflops=%.2f", m, k, n, 2 * m * k * n / median / 1e9)
elseif workload == "stencil" then
  -- u <- u + 0.1 laplacian5(u) on {rows, 2048} f32, 20 steps, each one observed (named).
  local cols, steps = 2048, 20
  local rows = B.small and 64 or (mode == "weak" and 1024 * grow or 2048)
  if B.small then cols, steps = 64, 2 end
  median = B.time(function(i)
    tp.env.u = tp.rand({rows, cols}, {seed = 100 + i})
    tp.eval()
  end, function()
    for _ = 1, steps do
      tp.env.u = tp.env.u + 0.1 * tp.stencil(tp.env.u, lap)
      tp.eval()
    end
  end)
  note = string.format("rows=%d cols=%d steps=%d", rows, cols, steps)
else
  error("workload: matmul or stencil")
end
local layout = ""
for _, r in ipairs(tp.tensors()) do
  if r.name == (workload == "matmul" and "c" or "u") then layout = r.layout end
end
B.report(workload .. "-" .. mode, "tapestry", median, string.format("%s ranks=%d layout=%s", note, ranks, layout:gsub(" ", "_")))
