-- A worker killed with SIGKILL is reported by rank 0 within seconds, naming the rank, and
-- tapestry exits with a non-zero status; it never hangs. Run as (kill_worker.cmake checks it):
--   OMPI_MCA_orte_abort_on_non_zero_status=0 mpirun -n 3 tapestry kill_worker.lua
-- The workers are the other children of our parent (mpirun), found through /proc and ps.
local function stat(path)
  local f = assert(io.open(path))
  local line = f:read("l")
  f:close()
  local pid, ppid = line:match("^(%d+) %b() %a (%d+)")
  return tonumber(pid), tonumber(ppid)
end
local me, parent = stat("/proc/self/stat")
local victim
for pid in io.popen("ps -o pid= --ppid " .. parent):lines() do
  pid = tonumber(pid)
  if pid and pid ~= me then victim = pid end
end
assert(victim, "no worker process found next to rank 0")

tp.env.w = tp.rand({256, 256}, {seed = 1})
print(string.format("sum before: %.3f", tp.env.w:sum():item()))
io.stdout:flush()
os.execute("kill -9 " .. victim)
print("killed worker pid " .. victim)
io.stdout:flush()
tp.env.v = tp.env.w:matmul(tp.env.w)  -- any plan now finds the dead rank
print(tp.env.v:sum():item())
print("NOT REACHED: the dead worker was not noticed")
