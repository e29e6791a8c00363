-- Memory beyond RAM (engine/session/spill.hpp): run with --memory-per-rank 1M, below what this
-- script holds (12 snapshots of a 256^2 f32 heat grid, 3 MiB, plus each step's own need). The
-- coldest values and stored pieces go to the spill directory and come back when read: every
-- snapshot equals a plain Lua computation of the same steps. With TAPESTRY_SPILL=0 the same run
-- is refused (the budget is really below the working set); with TAPESTRY_SPILL_FAULT=1 (a full
-- disk) the error names what could not be spilled, and the environment goes on. Run on 1 rank,
-- 3 virtual ranks and mpirun -n 2 (tests/lua/CMakeLists.txt, tests/mpi/CMakeLists.txt).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local mode = os.getenv("TAPESTRY_SPILL_FAULT") == "1" and "full" or
             os.getenv("TAPESTRY_SPILL") == "0" and "off" or "on"

local n, steps = 256, 12
local lap = {{0, 1, 0}, {1, -4, 1}, {0, 1, 0}}
local u0 = tp.rand({n, n}, {seed = 23})

-- The reference: the same explicit steps in Lua's doubles, zero outside the grid.
local function reference(first)
  local out, u = {}, first
  for k = 1, steps do
    local v = {}
    for i = 1, n do
      local row, up, dn, r = {}, u[i - 1], u[i + 1], u[i]
      for j = 1, n do
        local s = (up and up[j] or 0) + (dn and dn[j] or 0) + (r[j - 1] or 0) + (r[j + 1] or 0) - 4 * r[j]
        row[j] = r[j] + 0.1 * s
      end
      v[i] = row
    end
    out[k], u = v, v
  end
  return out
end

local function same_grid(got, want)
  local worst = 0
  for i = 1, n do
    for j = 1, n do worst = math.max(worst, math.abs(got[i][j] - want[i][j])) end
  end
  return worst
end

-- Every step named: tp.env.s1 .. s12 (stored tensors), u in a local (a value the session keeps).
local function run()
  local u = tp.eval(u0)
  for k = 1, steps do
    u = tp.eval(u + 0.1 * tp.stencil(u, lap))
    tp.env["s" .. k] = u
  end
end

if mode == "on" then
  check.test("spill.heat_steps_equal_the_reference", function()
    local want = reference(u0:totable())
    run()
    for k = 1, steps do   -- s1 first: the coldest, read back from disk
      local worst = same_grid(tp.env["s" .. k]:totable(), want[k])
      check.truthy(worst < 1e-5, "s" .. k .. " differs by " .. worst)
    end
  end)
  -- Under MPI the ranks spill their own pieces (the driver, or rank 0, holds none of them):
  -- tp.stats() adds up what every rank's statuses said.
  check.test("spill.counted", function()
    local st = tp.stats()
    check.truthy(st.spills > 0, "nothing was spilled")
    check.truthy(st.bytes_spilled >= n * n * 4 // tp.mesh().ranks, "bytes_spilled " .. st.bytes_spilled)
    check.truthy(st.spill_readbacks > 0, "nothing was read back")
  end)
else
  check.test("spill." .. mode .. ".fails_cleanly", function()
    local ok, err = pcall(run)
    check.truthy(not ok, "the run fitted the budget: it does not test spilling")
    err = tostring(err)
    check.truthy(err:find("out of memory", 1, true) or err:find("memory budget", 1, true), err)
    if mode == "full" then
      check.truthy(err:find("spilling to disk failed", 1, true), err)
      check.truthy(err:find("No space left on device", 1, true), err)
      check.truthy(err:find("cannot spill tp.env.s", 1, true) or err:find("cannot spill stored tensor", 1, true) or
                   err:find("cannot spill a f32", 1, true), err)
    end
  end)
  check.test("spill." .. mode .. ".environment_goes_on", function()
    -- What was made before the failure is still there, in memory, with its values.
    local have = 0
    for k = 1, steps do if tp.env["s" .. k] then have = k end end
    check.truthy(have >= 1, "no step was stored before the failure")
    for k = 1, have - 1 do tp.env["s" .. k] = nil end   -- make room
    collectgarbage(); collectgarbage()
    local want = reference(u0:totable())
    check.truthy(same_grid(tp.env["s" .. have]:totable(), want[have]) < 1e-5, "s" .. have .. " changed")
    tp.env.z = tp.env["s" .. have] * 2
    check.near(tp.env.z:sum():item(), 2 * tp.env["s" .. have]:sum():item(), 1e-2)
  end)
end
check.summary()
