-- Out-of-core steps (engine/plan/bands.hpp): heat steps on a 512^2 f32 grid (1 MiB) whose
-- every step needs its input and output grids, 2 MiB, at once when run whole. Run twice by
-- tests/lua/CMakeLists.txt and tests/mpi/CMakeLists.txt (1 rank, 3 virtual ranks, mpirun -n 2):
--   tapestry bands.lua ref.npy                           the unconstrained run
--   tapestry --memory-per-rank B bands.lua ooc.npy ooc   B below a step's share of a rank
-- and the two saved grids must be equal byte for byte (cmp). The unconstrained run checks the
-- grid against a plain Lua computation of the same steps; the constrained one that its steps
-- ran in bands (more blocks than ranks) and, where this process holds the pieces (not under
-- MPI, whose workers spill on their own), that pieces went to disk and came back.
-- `off` (with TAPESTRY_SPILL=0): the same budget refuses the steps, and the session goes on.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local out, mode = arg[1], arg[2] or "ref"
local on_mpi = tp.mesh().transport == "mpi"
local ranks = tp.mesh().ranks

local n, steps = 512, 6
local lap = {{0, 1, 0}, {1, -4, 1}, {0, 1, 0}}
local u0 = tp.eval(tp.rand({n, n}, {seed = 23}))

local function reference(u)
  for _ = 1, steps do
    local v = {}
    for i = 1, n do
      local row, up, dn, r = {}, u[i - 1], u[i + 1], u[i]
      for j = 1, n do
        local s = (up and up[j] or 0) + (dn and dn[j] or 0) + (r[j - 1] or 0) + (r[j + 1] or 0) - 4 * r[j]
        row[j] = r[j] + 0.1 * s
      end
      v[i] = row
    end
    u = v
  end
  return u
end

local function run()
  local u = u0
  for _ = 1, steps do u = tp.eval(u + 0.1 * tp.stencil(u, lap)) end
  return u
end

if mode == "off" then
  check.test("bands.off.refused_and_the_session_goes_on", function()
    local ok, err = pcall(run)
    check.truthy(not ok, "the steps fitted the budget: it does not test bands")
    err = tostring(err)
    check.truthy(err:find("memory budget", 1, true) or err:find("out of memory", 1, true), err)
    check.truthy((u0[{ {1, 8}, {} }] * 2):sum():item() > 0, "u0 is not readable after the failure")
  end)
  check.summary()
  return
end

local blocks0 = tp.stats().blocks_run
local u = run()
if mode == "ref" then
  check.test("bands.ref.equals_the_reference", function()
    local want, got, worst = reference(u0:totable()), u:totable(), 0
    for i = 1, n do
      for j = 1, n do worst = math.max(worst, math.abs(got[i][j] - want[i][j])) end
    end
    check.truthy(worst < 1e-5, "differs by " .. worst)
  end)
else
  check.test("bands.ooc.ran_in_bands", function()
    local per_step = (tp.stats().blocks_run - blocks0) / steps
    check.truthy(per_step > 2 * ranks, "a step ran " .. per_step .. " blocks on " .. ranks .. " ranks: not in bands")
  end)
  if not on_mpi then
    check.test("bands.ooc.spilled_and_read_back", function()
      local st = tp.stats()
      check.truthy(st.spills > 0, "nothing was spilled")
      check.truthy(st.spill_readbacks > 0, "nothing was read back")
    end)
  end
end
if out then tp.save(u, out) end
check.summary()
