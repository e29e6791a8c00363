-- TAPESTRY_MEMORY_PER_RANK=100M (set by tests/lua/CMakeLists.txt): K/M/G as --memory-per-rank,
-- enforced on one rank as on several, by every allocation. Run with TAPESTRY_SPILL=0: with
-- spilling a result larger than the budget would go to disk in bands instead of being refused.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

test("budget.parsed_as_the_flag", function()
  eq(tp.mesh().memory_per_rank, 100 * 2 ^ 20)
end)

test("budget.a_400_MB_tensor_is_refused", function()
  if tp.mesh().ranks == 1 then  -- refused by the allocation
    check.check_error(function() return tp.eval(tp.rand{1e8}) end, "out of memory", "381.5 MiB",
                      "memory budget of 100.0 MiB")
  else  -- refused by the plan, before anything runs
    check.check_error(function() return tp.eval(tp.rand{1e8}) end, "the plan needs", "memory-per-rank")
  end
  local ok = tp.eval(tp.rand{1e6})  -- 4 MB: fine
  eq(ok.shape, {1000000})
end)

test("budget.the_planner_uses_it", function()
  -- On several ranks the plan is refused before it runs (every rank's share over 100 MiB).
  if tp.mesh().ranks > 1 then
    check.check_error(function() return tp.eval(tp.rand{1e9}) end, "memory-per-rank")
  end
end)

check.summary()
