-- A failure on one worker becomes a Lua error on rank 0 naming that rank; the session and
-- the environment go on as before. Run as:
--   TAPESTRY_FAULT=RANK:3[:oom] mpirun -n N tapestry fault.lua RANK
-- (the fault hits the third plan a worker gets: the first two compute tp.env.w and its sum).
local rank = assert(tonumber(arg[1]), "usage: fault.lua RANK")

tp.env.w = tp.rand({256, 256}, {seed = 5}) * 3
local before = tp.env.w:sum():item()            -- plans 1 and 2: bind w, sum it

local ok, err = pcall(function()
  tp.env.w = tp.env.w:matmul(tp.env.w) + 1       -- plan 3 fails on rank RANK
  return tp.env.w:sum():item()
end)
assert(not ok, "the injected failure did not surface as a Lua error")
err = tostring(err)
assert(err:find("rank " .. rank .. ":", 1, true), "the error does not name rank " .. rank .. ": " .. err)
print("caught: " .. err)

-- The binding that failed left the old value in place, and later plans run on every rank.
assert(tp.env.w:sum():item() == before, "tp.env.w changed after a failed evaluation")
local again = (tp.env.w * 2):sum():item()
assert(math.abs(again - 2 * before) <= 1e-5 * math.abs(again), "wrong value after the failure")
print("ok: the session goes on")
-- With device peers, the failed run's device transfers may be half-matched: they are retired,
-- and the runs above crossed through the host instead.
local m = tp.mesh()
if m.device ~= "cpu" then
  assert(m.device_transport:find("retired after a failed run", 1, true), "peers still used: " .. m.device_transport)
end
