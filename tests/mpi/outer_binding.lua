-- Under `mpirun -n 2 tapestry`, Open MPI binds each rank of the user's job to one core. Rank 0
-- becomes the driver and launches a job of its own: that job must get the CPUs the user's mpirun
-- runs on, not rank 0's one core (both of its ranks shared it, each at half speed: 20 heat steps
-- of 4096^2 took 0.53 s instead of 0.15 s). Run by tests/mpi/CMakeLists.txt
-- (mpi.driver.outer_binding_np2).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lua/lib/?.lua;" .. package.path
local check = require "check"

local function stat(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if not f then return nil end
  local line = f:read("l")
  f:close()
  return line
end
local function parent(pid) return (stat(pid) or ""):match("^%d+ %b() %S+ (%d+)") end
local function comm(pid) return (stat(pid) or ""):match("^%d+ %((.*)%)") end
local function cpus(pid)
  local f = io.open("/proc/" .. pid .. "/status")
  if not f then return nil end  -- gone since it was listed
  for l in f:lines() do
    local v = l:match("^Cpus_allowed_list:%s*(%S+)")
    if v then f:close(); return v end
  end
  f:close()
end
-- Every process whose parent is `pid` (no `ps` needed), but the shell and `ls` that list them:
-- they are children of this process too, and gone by the time their CPUs are read.
local function children(pid)
  local out, names = {}, {}
  local ls = io.popen("ls /proc")
  for name in ls:lines() do names[#names + 1] = name end
  ls:close()
  for _, name in ipairs(names) do
    if name:match("^%d+$") and parent(name) == pid and comm(name) ~= "sh" and comm(name) ~= "ls" then
      out[#out + 1] = name
    end
  end
  return out
end

local me = stat("self"):match("^(%d+)")
local launcher = parent(me)   -- the user's mpirun

check.test("outer_binding.the_job_runs_on_the_launchers_cpus", function()
  check.eq(tp.mesh().ranks, 2)
  check.eq((tp.ones({64, 64}) * 2):sum():item(), 8192)   -- the job is up
  check.eq(cpus(me), cpus(launcher), "the driver")
  local ranks = 0
  for _, m in ipairs(children(me)) do                 -- the job's mpirun
    check.eq(cpus(m), cpus(launcher), "the job's mpirun")
    for _, r in ipairs(children(m)) do
      check.eq(cpus(r), cpus(launcher), "a rank of the job")
      ranks = ranks + 1
    end
  end
  check.truthy(ranks >= 2, "found " .. ranks .. " ranks of the driver's job")
end)
check.summary()
