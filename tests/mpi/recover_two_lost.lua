-- Ranks 1 and 2 of the driver's MPI job killed at once: rank 1's pieces had their only copy on
-- rank 2, so every tensor with pieces on rank 1 has no surviving copy. What has lineage (w from a
-- creator, v computed from w) is recomputed, what is in the last checkpoint (c, whose lineage died
-- with its input at the rebind) is read back from it, and what has neither (x) is named: reading
-- it fails with a clear error, and the rest of the environment goes on.
-- Run as: mpirun -n 3 tapestry recover_two_lost.lua [--shrink]
local here = io.open("/proc/self/stat"):read("l"):match("^(%d+)")
local ranks = {}
for line in io.popen("/usr/bin/python3 job_ranks.py " .. here):lines() do
  local r, p = line:match("^(%d+) (%d+)$")
  ranks[tonumber(r)] = tonumber(p)
end
assert(ranks[1] and ranks[2], "the job's ranks 1 and 2 were not found")
local shrink = arg[1] == "--shrink"

local function same(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    for j = 1, #a[i] do
      if a[i][j] ~= b[i][j] then return false end
    end
  end
  return true
end

local trace = os.tmpname()
tp.trace(trace)
tp.env.c = tp.rand({300, 200}, {seed = 5})
tp.eval(tp.env.c)
tp.env.c = tp.env.c * 3 + 1                           -- its input, the old c, dies: no lineage
tp.env.small = tp.tensor({1, 2, 3})                   -- whole on rank 0 (the driver holds it)
local dir = os.tmpname()
os.remove(dir)
tp.checkpoint(dir)                                    -- holds c (and small)
tp.env.w = tp.rand({300, 200}, {seed = 3})            -- lineage: a creator
tp.env.v = tp.env.w * 2 + 1                           -- lineage: computed from w
tp.env.x = tp.randn({300, 200}, {seed = 4})
tp.eval(tp.env.x)
tp.env.x = tp.env.x - 1                               -- no lineage, not in the checkpoint
tp.eval(tp.zeros({1}))                                -- computes x and c with no Tensor on the old ones
collectgarbage()
collectgarbage()
-- Read through `* 1`: reading a named tensor itself would keep a copy of it on the driver.
local before = {w = (tp.env.w * 1):totable(), v = (tp.env.v * 1):totable(), c = (tp.env.c * 1):totable()}
print(string.format("w sums to %.3f, x to %.3f", tp.env.w:sum():item(), tp.env.x:sum():item()))
os.execute("kill -9 " .. ranks[1] .. " " .. ranks[2])
print("killed ranks 1 and 2")
io.stdout:flush()

for _, name in ipairs({"w", "v", "c"}) do
  assert(same(before[name], (tp.env[name] + 0):totable()), name .. " changed value")  -- not cached
  print(name .. " read back equal")
end
local ok, err = pcall(function() return (tp.env.x * 2):sum():item() end)
print("reading x: " .. tostring(err))
assert(not ok, "x was read although it had no copy, no lineage and no checkpoint")
assert(tostring(err):find("x", 1, true) and tostring(err):find("lost", 1, true), "the error does not name x as lost")
-- Later reads say the same, and the listing marks it lost.
ok, err = pcall(function() return (tp.env.x + 1):sum():item() end)
assert(not ok and tostring(err):find("lost with the MPI job", 1, true), "a later read: " .. tostring(err))
local listed = {}
for _, row in ipairs(tp.tensors()) do listed[row.name] = row end
assert(listed.x.lost and listed.x.layout == "lost with the MPI job", "x is not listed as lost")
assert(not listed.w.lost and not listed.c.lost, "w or c is listed as lost")
-- The environment goes on: what survived, and new work on the relaunched job.
assert((tp.env.small * 2):sum():item() == 12, "small changed")
tp.env.z = tp.rand({100, 30}, {seed = 4}) + 1
assert(tp.env.z:min():item() >= 1, "the relaunched job computes wrong values")
local s = tp.stats()
print(string.format("relaunches %d, from lineage %d, from the checkpoint %d, lost %d, ranks %d", s.job_relaunches,
  s.restored_from_lineage, s.restored_from_checkpoint, s.tensors_lost, tp.mesh().ranks))
assert(s.job_relaunches == 1, "expected one relaunch")
assert(s.restored_from_lineage >= 2, "w and v were not recomputed from their lineage")
assert(s.restored_from_checkpoint == 1, "c was not read from the checkpoint")
assert(s.tensors_lost >= 1, "x is not counted as lost")
assert(tp.mesh().ranks == (shrink and 2 or 3), "the job has " .. tp.mesh().ranks .. " ranks")
-- The trace says which source each came from.
tp.trace(nil)
local events = io.open(trace):read("a")
os.remove(trace)
assert(events:find('"cat":"recover","name":"job"', 1, true), "no recover event of the job in the trace")
local ev = events:match('"cat":"recover","name":"lineage and checkpoint"[^\n]*')
print("trace: " .. tostring(ev))
assert(ev and ev:find('"restored_from_lineage":2', 1, true) and ev:find('"restored_from_checkpoint":1', 1, true),
  "no recover event with the lineage and checkpoint counts in the trace")
os.execute("rm -rf " .. dir)
print("ok")
