-- Placements and collectives on the running mesh (1 rank, virtual ranks, mpirun): each gives the
-- single-rank values, and the bytes tp.stats() counts for its run equal the bytes of its plan
-- (plan:cost().bytes_moved), by kind too (tp.stats().collectives).
--   TAPESTRY_RANKS=4 tapestry moves.lua        mpirun -n 2 tapestry moves.lua
local ranks = tp.mesh().ranks
-- An observation plans with these budgets (engine/session/observe.cpp): tp.plan with the same
-- options on the same mesh gives the plan the observation runs (plans are deterministic).
local same = {search = {steps = 300, budget = 200000}}

local function copy_counts(s)
  local c = {}
  for kind, v in pairs(s.collectives) do c[kind] = {count = v.count, bytes = v.bytes} end
  return c
end

-- Runs y; returns the plan and what tp.stats() counted for the run, by kind.
local function run(name, y, want, tol)
  local plan = tp.plan(y, same)
  local before = tp.stats()
  local kinds0 = copy_counts(before)
  local got = y:totable()
  local after = tp.stats()
  local measured = (after.bytes_transfers - before.bytes_transfers) + (after.bytes_combines - before.bytes_combines)
  local planned = plan:cost().bytes_moved
  assert(measured == planned, ("%s: the ranks counted %d bytes, the plan moves %d\n%s"):format(
    name, measured, planned, tostring(plan)))
  local by_kind, kinds = 0, {}
  for kind, v in pairs(after.collectives) do
    local n, b = v.count - kinds0[kind].count, v.bytes - kinds0[kind].bytes
    by_kind = by_kind + b
    if n > 0 then kinds[kind] = n end
  end
  assert(by_kind == planned, ("%s: %d bytes by kind, %d in the plan"):format(name, by_kind, planned))
  -- The plan lists the same moves.
  local listed = {}
  for _, c in ipairs(plan:collectives()) do listed[c.kind] = (listed[c.kind] or 0) + 1 end
  for kind, n in pairs(kinds) do
    assert(listed[kind] == n, ("%s: %d %s ran, the plan lists %s"):format(name, n, kind, tostring(listed[kind])))
  end
  -- The values are the single-rank evaluator's.
  local function flat(t, out)
    out = out or {}
    if type(t) ~= "table" then out[#out + 1] = t return out end
    for _, v in ipairs(t) do flat(v, out) end
    return out
  end
  local g, w = flat(got), flat(want)
  assert(#g == #w, name .. ": shape")
  for i = 1, #w do
    assert(math.abs(g[i] - w[i]) <= tol * math.max(1, math.abs(w[i])),
           ("%s: element %d is %g, want %g"):format(name, i, g[i], w[i]))
  end
  return kinds, plan
end

-- Replicated: a weight materialized on rank 0 copied to every rank (a broadcast tree).
local w = tp.eval(tp.rand({96, 64}, {seed = 2}))
local kinds = run("replicated", (w:constrain(tp.replicated()) * 2):sum(1), (w * 2):sum(1):totable(), 1e-5)
if ranks >= 3 then assert(kinds.broadcast or kinds["all-gather"], "a replica comes down a tree") end

-- The trace names each move of the runs below.
local trace_path = os.tmpname()
tp.trace(trace_path)

-- Split reductions: x by columns, v by rows, so the k split moves no input.
local x = tp.rand({64, 32 * ranks}, {seed = 3})
local v = tp.rand({32 * ranks, 48}, {seed = 4})
local want = x:matmul(v):totable()
local xs, vs = x:constrain(tp.split(2)), v:constrain(tp.split(1))
-- Merged on every rank (the result is then replicated): an all-reduce, or its ring's two
-- halves as two collectives (a reduce-scatter, then an all-gather of the pieces).
kinds = run("all-reduce", xs:matmul(vs):constrain(tp.replicated()), want, 1e-4)
local all_reduced = kinds["all-reduce"] ~= nil
if ranks > 1 then
  assert(kinds["all-reduce"] or (kinds["reduce-scatter"] and kinds["all-gather"]),
         "k split, merged everywhere: an all-reduce")
end
-- Merged in row pieces, one per rank: a reduce-scatter (Megatron's row-parallel step).
kinds = run("reduce-scatter", xs:matmul(vs):constrain(tp.split(1)), want, 1e-4)
if ranks > 1 then assert(kinds["reduce-scatter"], "k split, merged in pieces: a reduce-scatter") end
-- Merged where it is read whole: a reduce.
kinds = run("reduce", xs:matmul(vs):sum(2), x:matmul(v):sum(2):totable(), 1e-4)
if ranks > 1 then assert(kinds.reduce or kinds["reduce-scatter"] or kinds["all-reduce"], "a merge") end

-- Rows to columns: every rank sends every other a slice (an all-to-all).
local r = tp.rand({16 * ranks, 16 * ranks}, {seed = 5}):constrain(tp.split(1))
kinds = run("all-to-all", (r * 1):constrain(tp.split(2)), (tp.rand({16 * ranks, 16 * ranks}, {seed = 5}) * 1):totable(), 0)
if ranks >= 3 then assert(kinds["all-to-all"], "rows to columns: an all-to-all") end

-- Rows to a copy on every rank: an all-gather.
kinds = run("all-gather", (r + 1):constrain(tp.replicated()):sum(2),
            (tp.rand({16 * ranks, 16 * ranks}, {seed = 5}) + 1):sum(2):totable(), 1e-5)
if ranks >= 3 then assert(kinds["all-gather"] or kinds.broadcast, "rows to every rank: an all-gather") end

-- Three dims split: a 3-D grid of an elementwise op, and back.
if ranks >= 2 then
  local c = tp.rand({4, 4, 4}, {seed = 6})
  run("3-dim split", (c:constrain(tp.grid{2, 2, 2}) * 3):sum(), (c * 3):sum():totable(), 1e-5)
end
tp.trace(nil)
local f = assert(io.open(trace_path))
local trace = f:read("a")
f:close()
os.remove(trace_path)
if ranks > 1 then
  for _, kind in ipairs(all_reduced and {"all-reduce", "reduce-scatter"} or {"reduce-scatter"}) do
    assert(trace:find('"name":"' .. kind .. ' sum', 1, true), "the trace names the " .. kind)
    assert(trace:find('"move":"' .. kind .. '"', 1, true), "trace args: " .. kind)
  end
  -- Exchanges are steps of their own, named by their kind ("all-to-all (mul)").
  assert(trace:find('"cat":"exchange","name":"all-to-all (', 1, true), "the trace names the all-to-all")
  assert(trace:find('"move":"all-to-all"', 1, true), "trace args: all-to-all")
  if not all_reduced then assert(trace:find('"cat":"exchange","name":"all-gather (', 1, true), "all-gather") end
  if tp.mesh().transport == "mpi" then  -- with a simulated device too: partials merge on the host
    assert(trace:find('"collective":"reduce-scatter"', 1, true), "MPI ran the reduce-scatter as one")
    if all_reduced then assert(trace:find('"collective":"all-reduce"', 1, true), "MPI ran the all-reduce") end
    assert(trace:find('"collective":"all-to-all"', 1, true), "MPI ran the all-to-all as one")
  end
end

-- The tools on a modelled mesh of named axes: placements per axis, moves with bytes and time,
-- and :layout's partials and copies.
local mx = tp.rand({256, 8192}, {seed = 3}):constrain(tp.split(2))
local mv = tp.rand({8192, 256}, {seed = 4}):constrain(tp.split(1))
local text = tostring(tp.plan(mx:matmul(mv), {mesh = tp.mesh{nodes = 2, gpus = 4}}))
assert(text:find("k/8 + reduce-scatter [nodes: k partial sum, gpus: k partial sum]", 1, true), text)
assert(text:find("reduce-scatter over 8 ranks: 1.75 MiB, ", 1, true), text)
local a2 = tp.rand({1024, 1024}, {seed = 1}):constrain(tp.grid{2, 4})
text = tostring(tp.plan(a2:matmul(a2):constrain(tp.grid{2, 4}), {mesh = tp.mesh{nodes = 2, gpus = 4}}))
assert(text:find("matmul #%d+ {1024,1024} f32: i/2 x j/4 %[nodes: i, gpus: j%]"), text)
for _, c in ipairs(tp.plan(mx:matmul(mv), {mesh = 8}):collectives()) do
  assert(c.kind == "reduce-scatter" and c.ranks == 8 and c.bytes == 7 * 256 * 256 * 4 and c.time > 0, c.kind)
end
local map = tp.layout_map(mx:matmul(mv), {mesh = 4})
assert(map:find("from partial sums on 4 ranks (k/4 + ", 1, true), map)
print("ok")
