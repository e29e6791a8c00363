-- Blocks on a device: run with TAPESTRY_DEVICE=sim (the simulated device: its own memory, the
-- CPU's kernels) on 1 rank, on virtual ranks and under mpirun, and with TAPESTRY_DEVICE=cuda on
-- a GPU machine (tests/gpu/run.sh). Values are checked against plain Lua arithmetic, and the
-- counters must show the work ran on the device and that data crossed only where needed.
local m = tp.mesh()
assert(m.device == "sim" or m.device == "cuda", "run with TAPESTRY_DEVICE=sim or cuda, not " .. m.device)
-- Between ranks, slices move device to device (NCCL on GPUs) unless TAPESTRY_DEVICE_PEERS=0.
if m.ranks > 1 and os.getenv("TAPESTRY_DEVICE_PEERS") ~= "0" then
  assert(not m.device_transport:find("^none"), "no device peers: " .. m.device_transport)
elseif m.ranks > 1 then
  assert(m.device_transport:find("^none"), "device peers despite TAPESTRY_DEVICE_PEERS=0")
end
local function close(a, b, tol)
  return math.abs(a - b) <= (tol or 1e-4) * math.max(1, math.abs(a), math.abs(b))
end

-- A layer, relu(x @ w + b), against the same sums in Lua.
local x = tp.rand({24, 5}, {seed = 1})
local w = tp.rand({5, 3}, {seed = 2}) - 0.5
local b = tp.tensor({0.1, -0.2, 0.3})
local before = tp.stats()
local y = tp.relu(x:matmul(w) + b):totable()
local after = tp.stats()
local xt, wt, bt = x:totable(), w:totable(), b:totable()
for i = 1, 24 do
  for j = 1, 3 do
    local s = bt[j]
    for k = 1, 5 do s = s + xt[i][k] * wt[k][j] end
    assert(close(y[i][j], math.max(s, 0)), ("y[%d][%d] = %g, want %g"):format(i, j, y[i][j], math.max(s, 0)))
  end
end
assert(after.device_blocks > before.device_blocks, "nothing ran on the device")
assert(after.bytes_to_device > before.bytes_to_device, "no input reached the device")
assert(after.bytes_from_device > before.bytes_from_device, "the result never left the device")

-- A reduction split over the ranks merges partials computed on the devices.
local s = x:sum():item()
local want = 0
for i = 1, 24 do for k = 1, 5 do want = want + xt[i][k] end end
assert(close(s, want), "sum " .. s .. " vs " .. want)

-- Heat steps: the stencil's halos cross between ranks, the state stays a named tensor.
local n = 16
tp.env.u = tp.rand({n, n}, {seed = 3})
local u = tp.env.u:totable()
for _ = 1, 3 do
  tp.env.u = tp.env.u + 0.1 * tp.stencil(tp.env.u, tp.tensor{{0, 1, 0}, {1, -4, 1}, {0, 1, 0}})
  local v = {}
  for i = 1, n do
    v[i] = {}
    for j = 1, n do
      local function at(a, c) return (a >= 1 and a <= n and c >= 1 and c <= n) and u[a][c] or 0 end
      v[i][j] = u[i][j] + 0.1 * (at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1) - 4 * u[i][j])
    end
  end
  u = v
end
local got = tp.env.u:totable()
for i = 1, n do
  for j = 1, n do assert(close(got[i][j], u[i][j], 1e-5), ("u[%d][%d]"):format(i, j)) end
end

-- A named tensor computed on the devices stays there: a later plan reads it in place (nothing
-- uploaded), and reading it back on the host downloads it.
tp.env.w2 = tp.rand({64, 32}, {seed = 5}) * 2
tp.eval(tp.env.w2)
local up = tp.stats().bytes_to_device
tp.env.v2 = tp.env.w2 + 1
tp.eval(tp.env.v2)
if m.ranks > 1 then
  assert(tp.stats().bytes_to_device == up, "a stored shard was uploaded again: " .. (tp.stats().bytes_to_device - up))
end
assert(close(tp.env.v2:sum():item(), tp.env.w2:sum():item() + 64 * 32), "v2 = w2 + 1")

-- Every dtype crosses the host/device boundary intact.
for _, dt in ipairs({"f32", "f64", "i32", "i64", "bool"}) do
  local t = (tp.arange(1, 12):reshape{3, 4}:cast(dt))
  local back = (t:cast("f64") * 2):sum():item()
  local want_sum = dt == "bool" and 24 or 156
  assert(back == want_sum, dt .. ": " .. back)
end
print(("device %s: %d blocks on the device, %d bytes up, %d bytes down"):format(
  m.device, tp.stats().device_blocks, tp.stats().bytes_to_device, tp.stats().bytes_from_device))
