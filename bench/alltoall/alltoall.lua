-- A 64 MiB all-to-all: a 4096 x 4096 f32 named tensor split by rows over the ranks,
-- redistributed to be split by columns (every rank sends 1/p of its rows to every other rank).
--   mpirun -n 8 tapestry bench/alltoall/alltoall.lua     (BENCH_SMALL=1: 256 x 256)
-- Each run gets a fresh tensor (a new seed): a lazy, hash-consed expression on the same input
-- would read back the value computed the first time. Only the redistribution is timed; its
-- columns stay where they land (a named tensor), nothing is gathered to rank 0.
-- BENCH_KIND=bcast: a n x n tensor whole on rank 0 copied to every rank (a broadcast; BENCH_N=512
-- is 1 MiB); BENCH_KIND=allgather: split by rows, copied whole to every rank (an all-gather).
local B = dofile((arg[0]:match("(.*/)") or "./") .. "../common.lua")
local n = tonumber(os.getenv("BENCH_N") or "") or (B.small and 256 or 4096)
local ranks = tp.mesh().ranks
local kind = os.getenv("BENCH_KIND") or "a2a"
if kind ~= "a2a" then
  local from = kind == "bcast" and tp.grid{1, 1} or tp.split(1)
  local median = B.time(function(i)
    tp.env.src = tp.rand({n, n}, {seed = 100 + i}):constrain(from)
    tp.eval(tp.env.src)
    return tp.env.src
  end, function(src)
    tp.env.copy = src:constrain(tp.replicated())
    tp.eval(tp.env.copy)
  end)
  local plan = tp.plan(tp.env.src:constrain(tp.replicated()))
  local moves = {}
  for _, c in ipairs(plan:collectives()) do moves[#moves + 1] = c.kind end
  B.report(kind == "bcast" and "BCAST" or "ALLGATHER", "tapestry", median,
           string.format("n=%d ranks=%d MiB=%.1f moves=%s", n, ranks, 4.0 * n * n / 2 ^ 20, table.concat(moves, ",")))
  return
end

local median = B.time(function(i)
  tp.env.rows = tp.rand({n, n}, {seed = 100 + i}):constrain(tp.split(1))
  tp.eval(tp.env.rows)
  return tp.env.rows
end, function(rows)
  tp.env.cols = rows:constrain(tp.split(2))
  tp.eval(tp.env.cols)
end)
local moved = tp.stats().bytes_moved
B.report("A2A", "tapestry", median,
         string.format("n=%d ranks=%d MiB=%.1f", n, ranks, 4.0 * n * n * (ranks - 1) / ranks / 2 ^ 20))
