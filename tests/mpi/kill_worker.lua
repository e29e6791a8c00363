-- A worker killed with SIGKILL (or stopped with SIGSTOP: `kill_worker.lua STOP`) is reported by
-- rank 0 within seconds, naming the rank, and tapestry exits with a non-zero status; it never
-- hangs. Run as (kill_worker.cmake checks it):
--   OMPI_MCA_orte_abort_on_non_zero_status=0 mpirun -n 3 tapestry kill_worker.lua [STOP]
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
local signal = arg and arg[1] or "KILL"
os.execute("kill -" .. signal .. " " .. victim)
print("killed worker pid " .. victim .. " with SIG" .. signal)
io.stdout:flush()
tp.env.v = tp.env.w:matmul(tp.env.w)  -- any plan now finds the dead rank
local t0 = os.time()
local ok, err = pcall(function() return tp.env.v:sum():item() end)
print(string.format("noticed after %d s", os.time() - t0))
assert(not ok, "NOT REACHED: the lost worker was not noticed")
-- The lost tensors are not listed as present any more.
for _, row in ipairs(tp.tensors()) do print("listed: " .. row.name .. " " .. tostring(row.lost) .. " " .. row.layout) end
error(err, 0)

