-- A budget above what the system gives (TAPESTRY_MEMORY_PER_RANK=100G under `ulimit -v` 2 GiB,
-- tests/lua/CMakeLists.txt): the allocation itself fails, and is neither fatal nor counted.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

test("system_refusal.not_counted", function()
  eq(tp.mesh().memory_per_rank, 100 * 2 ^ 30)
  collectgarbage()
  local before = tp.stats().bytes_live
  for _ = 1, 1000 do
    check.check_error(function() return tp.eval(tp.rand{2.5e9}) end, "out of memory")  -- 10 GB
  end
  eq(tp.stats().bytes_live, before)
  eq(tp.ones{4}:sum():item(), 4)
end)

check.summary()
