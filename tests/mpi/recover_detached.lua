-- Two processes of the driver's MPI job killed in quick succession, each right after an update
-- whose inputs are gone (docs/reliability.md, "Detached values"): an optimizer's step binds
-- tp.env to tp.detach's results, whose lineage dies with the old parameters and moments, so a
-- buddy replica is all that can bring them back. Run as
--   mpirun -n 3 tapestry recover_detached.lua FIRST SECOND     (tests/mpi/CMakeLists.txt)
-- It kills rank FIRST after two Adam steps, checks every stored tensor reads back equal, takes
-- one more step and kills rank SECOND at once. Before the fix every kill lost the Adam state:
-- "LOST __adam_m_w, ... (no copy, no lineage, no checkpoint)".
local nn = require "tapestry.nn"
local first, second = tonumber(arg[1]), tonumber(arg[2])
assert(first and second, "usage: recover_detached.lua FIRST SECOND")
local here = io.open("/proc/self/stat"):read("l"):match("^(%d+)")
local function job_ranks()
  local t = {}
  for line in io.popen("/usr/bin/python3 job_ranks.py " .. here):lines() do
    local r, p = line:match("^(%d+) (%d+)$")
    t[tonumber(r)] = tonumber(p)
  end
  return t
end

-- Every element of every named tensor, and of the unnamed detached `d`, read back exactly:
-- `x * k` is exact and computed on the job, a new expression for each k (the stored leaf itself
-- is never gathered to the driver, which would then hold its value through a loss).
local function read(t, k) return (t * k):reshape({-1}):totable() end
local function snapshot(d, k)
  local out = {}
  for _, row in ipairs(tp.tensors()) do out[row.name] = read(tp.env[row.name], k) end
  out["(detached d)"] = read(d, k)
  return out
end
local function same(a, b)  -- b read as x * 2, a as x * 1
  local n = 0
  for name, va in pairs(a) do
    local vb = assert(b[name], name .. " is gone")
    assert(#va == #vb, name .. " changed size")
    for i = 1, #va do
      assert(va[i] * 2 == vb[i], string.format("%s[%d]: %.17g before, %.17g after", name, i, va[i], vb[i] / 2))
    end
    n = n + 1
  end
  return n
end

tp.env.w = tp.randn({6, 10}, {seed = 1, dtype = "f64"})
tp.env.b = tp.detach(tp.zeros({10}, {dtype = "f64"}))
local x = tp.detach(tp.randn({12, 6}, {seed = 2, dtype = "f64"}))
local function step()
  local loss = (x:matmul(tp.env.w) + tp.env.b):tanh():square():mean()
  nn.adam({tp.env.w, tp.env.b}, tp.grad(loss, {tp.env.w, tp.env.b}), {lr = 0.05, eval = {loss}})
  return loss:item()
end
step()
step()
-- A name rebound to a tp.eval'd value whose input (the old u) dies at the rebind.
tp.env.u = tp.rand({9, 7}, {seed = 4, dtype = "f64"})
tp.env.u = tp.eval(tp.env.u * 3 + 1)
-- An unnamed detached value computed from a temporary that is then dropped.
local tmp = tp.eval(tp.env.u:matmul(tp.env.u:t()))
local d = tp.detach(tmp * 0.5)
tmp = nil
-- The update's inputs (old parameters and moments, the temporary) collected: no lineage left.
collectgarbage()
collectgarbage()

local function kill_and_check(victim, label)
  local before = snapshot(d, 1)
  local lost_before = tp.stats().tensors_lost
  local ranks = job_ranks()
  assert(ranks[victim], "no process of rank " .. victim .. " in the job")
  os.execute("kill -KILL " .. ranks[victim])
  print(string.format("%s: killed rank %d (pid %d)", label, victim, ranks[victim]))
  io.stdout:flush()
  local after = snapshot(d, 2)
  local n = same(before, after)
  local s = tp.stats()
  print(string.format("%s: %d tensors read back equal; relaunches %d, from replicas %d, lost %d", label, n,
    s.job_relaunches, s.restored_from_replicas, s.tensors_lost))
  assert(s.tensors_lost == lost_before, label .. ": a stored tensor was lost")
  assert(n >= 9, label .. ": only " .. n .. " tensors compared")
  -- Copied again on the new job, ready for the next loss. (The step counts are tp.tensor
  -- values: the driver holds them, no rank does.)
  for _, row in ipairs(tp.tensors()) do
    assert(row.replicated or row.name:match("^__adam_t_"), label .. ": " .. row.name .. " has no buddy replica")
  end
end

kill_and_check(first, "kill 1")
-- One more step on the new job, then the second kill right after it.
local loss = step()
collectgarbage()
collectgarbage()
kill_and_check(second, "kill 2")
local s = tp.stats()
assert(s.job_relaunches == 2, "expected two relaunches, got " .. s.job_relaunches)
assert(s.restored_from_replicas >= 1, "no tensor came back from a buddy replica")
-- Training goes on: the loss keeps falling.
local later = step()
print(string.format("loss %.6f, then %.6f", loss, later))
assert(later < loss, "the loss did not fall after the recoveries")
print("ok")
