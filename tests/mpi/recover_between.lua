-- A process of the driver's MPI job killed between two observations (kill -9 of rank RANK, or
-- SIGSTOP with `STOP`): the next observation notices, the job is relaunched, every stored tensor
-- comes back with the same values, and the script ends with status 0. Run as
--   mpirun -n 3 tapestry recover_between.lua RANK [STOP]     (tests/mpi/CMakeLists.txt)
--   mpirun -n 3 tapestry --shrink recover_between.lua RANK KILL SHRINK
-- With SHRINK the new job has 2 ranks: each stored tensor's pieces are mapped onto them, and
-- plans then use the smaller mesh.
local victim_rank = assert(tonumber(arg[1]), "usage: recover_between.lua RANK [STOP|KILL] [SHRINK]")
local signal = arg[2] or "KILL"
local shrink = arg[3] == "SHRINK"
local here = io.open("/proc/self/stat"):read("l"):match("^(%d+)")
local function job_ranks()
  local t = {}
  for line in io.popen("/usr/bin/python3 job_ranks.py " .. here):lines() do
    local r, p = line:match("^(%d+) (%d+)$")
    t[tonumber(r)] = tonumber(p)
  end
  return t
end

tp.env.w = tp.rand({300, 200}, {seed = 3})
tp.env.v = tp.env.w * 2 + 1
local kept = tp.eval(tp.env.w:matmul(tp.env.w:t()))   -- a stored tensor no name holds
-- Every element, read back: `x * k` is exact and a new expression each time (no cached value).
local function read(x, k) return (x * k):totable() end
local function same(a, b)
  for i = 1, #a do
    for j = 1, #a[i] do
      if a[i][j] ~= b[i][j] then return false end
    end
  end
  return #a == #b
end
local function checksum(t)
  local s = 0
  for i = 1, #t do for j = 1, #t[i] do s = s + t[i][j] * ((i * 31 + j) % 97) end end
  return s
end
local before = {read(tp.env.w, 1), read(tp.env.v, 1), read(kept, 1)}
for _, row in ipairs(tp.tensors()) do
  print(string.format("%s %s replicated=%s", row.name, row.layout, tostring(row.replicated)))
  assert(row.replicated, row.name .. " has no replica")
end
local ranks = job_ranks()
assert(ranks[victim_rank], "no process of rank " .. victim_rank .. " in the job")
os.execute("kill -" .. signal .. " " .. ranks[victim_rank])
print("killed rank " .. victim_rank .. " (pid " .. ranks[victim_rank] .. ") with SIG" .. signal)
io.stdout:flush()
local t0 = tp.clock()
local after = {read(tp.env.w, 2)}
print(string.format("recovered in %.1f s", tp.clock() - t0))
after[2], after[3] = read(tp.env.v, 2), read(kept, 2)
for i = 1, 3 do
  for r = 1, #before[i] do for c = 1, #before[i][r] do before[i][r][c] = before[i][r][c] * 2 end end
  print(string.format("checksum %d: %.6f before, %.6f after", i, checksum(before[i]), checksum(after[i])))
  assert(same(before[i], after[i]), "stored tensor " .. i .. " changed value")
end
local s = tp.stats()
print(string.format("relaunches %d, from survivors %d, from replicas %d, lost %d", s.job_relaunches,
  s.restored_from_survivors, s.restored_from_replicas, s.tensors_lost))
assert(s.job_relaunches == 1 and s.tensors_lost == 0, "expected one relaunch and nothing lost")
assert(s.restored_from_replicas >= 1, "no tensor came back from a buddy replica")
assert(tp.mesh().ranks == (shrink and 2 or 3), "the job has " .. tp.mesh().ranks .. " ranks")
for _, row in ipairs(tp.tensors()) do
  print(string.format("after: %s %s on %d ranks", row.name, row.layout, #row.bytes_per_rank))
  assert(#row.bytes_per_rank == tp.mesh().ranks, row.name .. " is not on the new mesh")
end
-- The new job works: new values, and the old ones rebound.
tp.env.w = tp.env.w + 1
assert(same(read(tp.env.w, 1), read(tp.env.v * 0.5 + 0.5, 1)), "the relaunched job computes wrong values")
print("ok")
