-- Shared by the workload scripts bench/w*.lua: the timing loop and the result line that
-- bench/run parses.  Load it with
--   local B = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
--
-- Timing rules (docs/benchmarks.md): inputs are made before the clock starts; one warm-up run,
-- then the median of `reps` timed runs.  Tapestry hash-conses expressions and keeps a computed
-- value on its node, so repeating an identical expression on identical inputs would only read
-- back the cached value.  Every run therefore gets fresh inputs from `setup(run)` (a new seed),
-- and the timed function must build its graph from them and observe the result (tp.eval or
-- :item()), which is everything a user waits for: building, planning, running, returning.
local B = {}

-- BENCH_SMALL=1: the ctest mode -- a tiny size and one timed run, only to see the script runs.
B.small = os.getenv("BENCH_SMALL") == "1"
B.reps = tonumber(os.getenv("BENCH_REPS") or "") or (B.small and 1 or 7)

function B.median(ts)
  table.sort(ts)
  local n = #ts
  return n % 2 == 1 and ts[(n + 1) // 2] or (ts[n // 2] + ts[n // 2 + 1]) / 2
end

-- Median seconds of run(inputs) over B.reps runs after one warm-up.
--   setup(i) -> inputs (untimed; materialize them with tp.eval)
--   run(inputs) -> anything (timed; must observe its result)
function B.time(setup, run)
  local ts = {}
  for i = 0, B.reps do
    local inputs = setup(i)
    -- Free the previous run's tensors now, not inside the timed region: Lua does not see the
    -- size of the buffers behind a tensor, so its collector would otherwise fire at random.
    collectgarbage()
    collectgarbage()
    local t0 = tp.clock()
    run(inputs)
    local t = tp.clock() - t0
    if i > 0 then ts[#ts + 1] = t end
  end
  if os.getenv("BENCH_ALL") then  -- every timed run, in order, on stderr: is the median one of two modes?
    local all = {}
    for k, t in ipairs(ts) do all[k] = string.format("%.4f", t) end
    io.stderr:write(table.concat(all, " "), "\n")
  end
  return B.median(ts), ts
end

-- The line bench/run reads:  RESULT <workload> <who> <median seconds> [note]
function B.report(workload, who, seconds, note)
  print(string.format("RESULT %s %s %.6g %s", workload, who, seconds, note or ""))
end

-- Ranks in this run (tp.mesh().ranks: virtual ranks, MPI ranks or 1).
function B.ranks()
  local m = tp.mesh()
  return m.ranks or 1
end

return B
