-- Ranks 1 and 2 of the driver's MPI job killed at once: rank 1's pieces had their only copy on
-- rank 2, so what had pieces on rank 1 is lost. The notice names it, reading it fails with a
-- clear error, and the rest of the environment (a tensor whole on rank 0, new work) goes on.
-- Run as: mpirun -n 3 tapestry recover_two_lost.lua
local here = io.open("/proc/self/stat"):read("l"):match("^(%d+)")
local ranks = {}
for line in io.popen("/usr/bin/python3 job_ranks.py " .. here):lines() do
  local r, p = line:match("^(%d+) (%d+)$")
  ranks[tonumber(r)] = tonumber(p)
end
assert(ranks[1] and ranks[2], "the job's ranks 1 and 2 were not found")

tp.env.w = tp.rand({300, 200}, {seed = 3})           -- split over the 3 ranks
tp.env.small = tp.tensor({1, 2, 3})                   -- whole on rank 0 (the driver holds it)
print(string.format("w sums to %.3f", tp.env.w:sum():item()))
os.execute("kill -9 " .. ranks[1] .. " " .. ranks[2])
print("killed ranks 1 and 2")
io.stdout:flush()

local ok, err = pcall(function() return (tp.env.w * 2):sum():item() end)
print("reading w: " .. tostring(err))
assert(not ok, "w was read although no copy of rank 1's pieces survived")
assert(tostring(err):find("w", 1, true) and tostring(err):find("lost", 1, true), "the error does not name w as lost")
-- Later reads say the same, and the listing marks it lost.
ok, err = pcall(function() return (tp.env.w + 1):sum():item() end)
assert(not ok and tostring(err):find("lost with the MPI job", 1, true), "a later read: " .. tostring(err))
local listed = {}
for _, row in ipairs(tp.tensors()) do listed[row.name] = row end
assert(listed.w.lost and listed.w.layout == "lost with the MPI job", "w is not listed as lost")
-- The environment goes on: what survived, and new work on the relaunched job.
assert((tp.env.small * 2):sum():item() == 12, "small changed")
tp.env.z = tp.rand({100, 30}, {seed = 4}) + 1
assert(tp.env.z:min():item() >= 1, "the relaunched job computes wrong values")
local s = tp.stats()
print(string.format("relaunches %d, lost %d", s.job_relaunches, s.tensors_lost))
assert(s.job_relaunches == 1 and s.tensors_lost >= 1)
print("ok")
