-- Split reductions and a k-split matmul through the real coordinator and workers: the values
-- are the single-rank ones (exact here: integer-valued data), and under mpirun the combines
-- ran as MPI collectives (the trace's combine events say so, workers' events included).
--   mpirun -n 4 tapestry collectives.lua        (also runs on one rank: no combines then)
local ranks = tp.mesh().ranks
local trace_path = os.tmpname()

local function close(got, want, rel)
  return math.abs(got - want) <= (rel or 0) * math.max(1, math.abs(want))
end

tp.trace(trace_path)

-- x[r][j] = r*K + j (1-based j), split along the reduced dim: one partial per rank.
local K = 1024 * ranks
for _, dtype in ipairs({"f64", "f32", "i64"}) do
  local x = tp.arange(1, 4 * K, {dtype = dtype}):reshape({4, K}):constrain(tp.grid({1, ranks}))
  local sums, maxs, mins = x:sum(2):totable(), x:max(2):totable(), x:min(2):totable()
  for r = 0, 3 do
    local want = r * K * K + K * (K + 1) / 2
    -- Exact in f64 and i64; f32 sums of integers below 2^24 are exact too, but the bound
    -- the engine promises for float sums is 1e-5 relative.
    assert(close(sums[r + 1], want, dtype == "f32" and 1e-5 or 0),
           string.format("%s sum of row %d: got %.17g, want %.17g", dtype, r + 1, sums[r + 1], want))
    assert(maxs[r + 1] == (r + 1) * K, dtype .. " max of row " .. r + 1)
    assert(mins[r + 1] == r * K + 1, dtype .. " min of row " .. r + 1)
  end
end

-- Logical reductions: row 1 all true, row 2 one false on the last rank's part.
local b = tp.ones({2, K}, {dtype = "bool"})
b = tp.where(tp.arange(1, 2 * K):reshape({2, K}):eq(2 * K), false, b):constrain(tp.grid({1, ranks}))
local all, any = b:all(2):totable(), b:any(2):totable()
assert(all[1] == true and all[2] == false, "all")
assert(any[1] == true and any[2] == true, "any")

-- y = a @ w with a and w split along k: a k-split matmul, partial sums combined.
local a = tp.ones({8, K}):constrain(tp.grid({1, ranks}))
local w = (tp.arange(1, K):reshape({K, 1}) * tp.ones({1, 8})):constrain(tp.grid({ranks, 1}))
local y = a:matmul(w):totable()
for i = 1, 8 do
  for j = 1, 8 do
    assert(close(y[i][j], K * (K + 1) / 2, 1e-5), string.format("y[%d][%d] = %.9g", i, j, y[i][j]))
  end
end

tp.trace(nil)
local f = assert(io.open(trace_path))
local trace = f:read("a")
f:close()
os.remove(trace_path)
local combines, collectives = 0, 0
for event in trace:gmatch("[^\n]+") do  -- one event per line
  if event:find('"cat":"combine"', 1, true) then
    combines = combines + 1
    if event:find('"collective":', 1, true) then collectives = collectives + 1 end
  end
end
print(string.format("%d ranks: %d combine steps traced, %d as collectives", ranks, combines, collectives))
if ranks > 1 then
  assert(combines > 0, "no combine ran: the plans did not split a reduction")
  assert(collectives == combines, "a regular combine ran point to point under MPI")
end
print("ok")
