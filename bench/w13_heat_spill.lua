-- W13: W4 (bench/w4_heat.lua: 4096^2 f32, 50 steps of u + 0.1 * laplacian5(u), each step
-- evaluated) run with --memory-per-rank below its working set, so the engine spills to
-- --spill-dir and reads back (docs/reliability.md, "Memory beyond RAM"):
--   tapestry --memory-per-rank 130M bench/w13_heat_spill.lua      (BENCH_SMALL=1: 64^2, 3 steps)
-- The same loop and timing as W4, so a run without the flag is the unspilled time. After the
-- timed runs the last final grid is written to BENCH_SAVE (if set), so two runs can be compared
-- byte for byte (cmp), and the spill counters are printed. BENCH_KEEP=K: a solver that keeps its
-- history, every K-th step named (tp.env.snap1, ...; each run rebinds them); with BENCH_SAVE
-- they are written too (BENCH_SAVE.1.npy, ...), read back from wherever they are.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local n = B.small and 64 or 4096
local steps = B.small and 3 or 50
local lap = {{0, 1, 0}, {1, -4, 1}, {0, 1, 0}}

local keep = tonumber(os.getenv("BENCH_KEEP") or "")
local ts, last = {}, nil
for i = 0, B.reps do
  local u = tp.eval(tp.rand({n, n}, {seed = 100 + i}))   -- fresh u0 per run, as W4
  collectgarbage()
  collectgarbage()
  local t0 = tp.clock()
  for k = 1, steps do
    u = tp.eval(u + 0.1 * tp.stencil(u, lap))
    if keep and k % keep == 0 then tp.env["snap" .. k // keep] = u end
  end
  if i > 0 then ts[#ts + 1] = tp.clock() - t0 end
  if i == B.reps then last = u end
end
local save = os.getenv("BENCH_SAVE")
if save then
  tp.save(last, save)
  last = nil
  for k = 1, keep and steps // keep or 0 do tp.save(tp.env["snap" .. k], save .. "." .. k .. ".npy") end
end
local st = tp.stats()
B.report("W13", "tapestry", B.median(ts),
  string.format("n=%d steps=%d keep=%s memory_per_rank=%d spills=%d bytes_spilled=%d spill_readbacks=%d", n, steps,
    tostring(keep), math.floor(tp.mesh().memory_per_rank), st.spills, st.bytes_spilled, st.spill_readbacks))
