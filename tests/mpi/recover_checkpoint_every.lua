-- The automatic checkpoint as a source: under --checkpoint-dir DIR --checkpoint-every MIN the
-- first observation past the interval writes every named tensor to DIR; ranks 1 and 2 killed at
-- once, `a` (no lineage: its input died at the rebind) comes back from that checkpoint with the
-- same values. Run as:
--   mpirun -n 3 tapestry --checkpoint-dir DIR --checkpoint-every 0.05 recover_checkpoint_every.lua DIR
local dir = assert(arg[1], "usage: recover_checkpoint_every.lua DIR")
local here = io.open("/proc/self/stat"):read("l"):match("^(%d+)")
local ranks = {}
for line in io.popen("/usr/bin/python3 job_ranks.py " .. here):lines() do
  local r, p = line:match("^(%d+) (%d+)$")
  ranks[tonumber(r)] = tonumber(p)
end
assert(ranks[1] and ranks[2], "the job's ranks 1 and 2 were not found")
os.execute("rm -rf " .. dir)

tp.env.a = tp.rand({300, 200}, {seed = 1})
tp.eval(tp.env.a)
tp.env.a = tp.env.a * 2 - 1                 -- its input dies: no lineage
tp.eval(tp.zeros({1}))                       -- computes a without a Lua reference to the old one
collectgarbage()                             -- no Tensor refers to the old a any more
collectgarbage()
local before = (tp.env.a * 1):totable()
assert(not io.open(dir .. "/manifest.json"), "a checkpoint was written before the interval passed")
os.execute("sleep 3.2")                      -- 0.05 minutes is 3 s
local sum = (tp.env.a * 1):sum():item()      -- the first observation past the interval
assert(io.open(dir .. "/manifest.json"), "no automatic checkpoint in " .. dir)
print(string.format("a sums to %.3f; checkpoint written", sum))
os.execute("kill -9 " .. ranks[1] .. " " .. ranks[2])
io.stdout:flush()
local after = (tp.env.a + 0):totable()   -- a new expression: no cached value
for i = 1, #before do
  for j = 1, #before[i] do assert(before[i][j] == after[i][j], "a changed value") end
end
local s = tp.stats()
print(string.format("relaunches %d, from the checkpoint %d, lost %d", s.job_relaunches,
  s.restored_from_checkpoint, s.tensors_lost))
assert(s.job_relaunches == 1 and s.restored_from_checkpoint == 1 and s.tensors_lost == 0)
os.execute("rm -rf " .. dir)
print("ok")
