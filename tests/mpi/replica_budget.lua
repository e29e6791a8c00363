-- Buddy replicas stay within their budget (half of --memory-per-rank, both copies counted)
-- whichever way a named tensor got stored: computed by its binding, returned by tp.detach, or
-- a tp.eval'd value bound as it is. Run as
--   mpirun -n 3 tapestry --memory-per-rank 12M replica_budget.lua    (tests/mpi/CMakeLists.txt)
-- A 1024 x 1024 f64 tensor takes 2.8 MB a rank, 5.6 MB with its replica: one fits in 6 MB.
local function replicated()
  local out = {}
  for _, row in ipairs(tp.tensors()) do out[row.name] = row.replicated end
  return out
end
tp.env.small = tp.detach(tp.rand({10, 10}, {seed = 1}) * 2)
tp.env.big = tp.detach(tp.rand({1024, 1024}, {seed = 2, dtype = "f64"}) * 2)
tp.env.big2 = tp.eval(tp.rand({1024, 1024}, {seed = 3, dtype = "f64"}) * 2)
tp.env.small:sum():item()  -- every binding settled
local r = replicated()
assert(r.small and r.big, "the detached tensors that fit the budget have no replica")
assert(not r.big2, "a tp.eval'd tensor bound to tp.env was replicated past the budget")
-- Its room given back, the next one fits.
tp.env.big = nil
tp.env.big2 = tp.eval(tp.env.big2 * 1)
tp.env.small:sum():item()
r = replicated()
assert(r.big2, "a tp.eval'd tensor bound to tp.env has no replica although it fits")
print("ok")
