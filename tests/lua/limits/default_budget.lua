-- The default memory budget: the memory available at start less a margin. Run under
-- `ulimit -v` 2 GiB (tests/lua/CMakeLists.txt), so "available" is that limit, and a request
-- larger than the machine is refused by the budget without using the machine's memory.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local budget = tp.mesh().memory_per_rank

test("budget.follows_the_address_space_limit", function()
  check.truthy(budget > 256 * 2 ^ 20 and budget < 2 * 2 ^ 30, "budget " .. budget)
end)

test("budget.refuses_what_the_machine_cannot_hold", function()
  -- 40 GB: mimalloc would map it unreserved and the kernel's OOM killer would end the session.
  check.check_error(function() return tp.zeros{1e5, 1e5}:sum():item() end, "out of memory",
                    "{100000,100000}", "37.3 GiB", "memory budget")
  eq(tp.stats().bytes_live, 0)
end)

test("budget.refuses_past_itself_before_the_kernel_does", function()
  -- Under the address-space limit, over the budget: the budget, not the kernel, says no.
  local n = math.floor((budget + 2 ^ 26) / 4)
  check.check_error(function() return tp.eval(tp.rand{n}) end, "tp.eval: out of memory", "memory budget")
  local half = tp.eval(tp.rand{math.floor(budget / 8)})  -- well within it: fine
  check.truthy(half:sum():item() > 0, "a tensor within the budget")
  half = nil
  collectgarbage()
end)

test("budget.failed_allocations_are_not_counted", function()
  collectgarbage()
  local before = tp.stats().bytes_live
  for _ = 1, 10000 do pcall(function() return tp.eval(tp.zeros{1e5, 1e5} + 1) end) end
  eq(tp.stats().bytes_live, before)
end)

test("budget.session_goes_on", function()
  tp.env.w = tp.ones{3}
  pcall(function() tp.env.big = tp.zeros{1e5, 1e5} + 1; return tp.env.w:sum():item() end)
  eq(tp.env.w:sum():item(), 3)
  eq(tp.env.big, nil)
end)

check.summary()
