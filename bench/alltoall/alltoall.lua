-- A 64 MiB all-to-all: a 4096 x 4096 f32 named tensor split by rows over the ranks,
-- redistributed to be split by columns (every rank sends 1/p of its rows to every other rank).
--   mpirun -n 8 tapestry bench/alltoall/alltoall.lua     (BENCH_SMALL=1: 256 x 256)
-- Each run gets a fresh tensor (a new seed): a lazy, hash-consed expression on the same input
-- would read back the value computed the first time. Only the redistribution is timed; its
-- columns stay where they land (a named tensor), nothing is gathered to rank 0.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "../common.lua")
local n = B.small and 256 or 4096
local ranks = tp.mesh().ranks

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
