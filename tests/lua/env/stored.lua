-- Named tensors stay sharded where they were computed (run on 4 virtual ranks, and under
-- mpirun -n 2 / -n 4): later plans read them where they lie, observing one gathers it, a
-- rebind keeps old readers working, a failed rebind keeps the old value, and a region write
-- moves only the slices it touches.
local function close(a, b) return math.abs(a - b) <= 1e-5 * math.max(1, math.abs(a), math.abs(b)) end
local ranks = tp.mesh().ranks

tp.env.w = tp.rand({512, 256}, {seed = 1})
tp.eval(tp.env.w)
local row = tp.tensors()[1]
assert(row.name == "w" and row.bytes == 512 * 256 * 4, "tp.tensors row")
assert(#row.bytes_per_rank == ranks, "bytes_per_rank has one entry per rank")
local total = 0
for _, b in ipairs(row.bytes_per_rank) do total = total + b end
assert(total >= row.bytes, "the shards cover w")
if ranks > 1 then
  assert(row.layout ~= "whole on rank 0", "w was gathered: " .. row.layout)
  assert(row.bytes_per_rank[1] < row.bytes, "rank 0 holds all of w")
end
print("w: " .. row.layout)

-- A map over a stored tensor reads it where it lies: nothing moves.
local before = tp.stats().bytes_moved
tp.env.v = tp.env.w * 2 + 1
tp.eval(tp.env.v)
assert(tp.stats().bytes_moved == before, "computing v moved " .. (tp.stats().bytes_moved - before) .. " bytes")

-- Observing gathers: the values are the single-rank ones.
local sw = tp.env.w:sum():item()
assert(close(tp.env.v:sum():item(), 2 * sw + 512 * 256), "v's values")

-- A rebind: a Tensor of the old version still reads the old values.
local old = tp.env.w
tp.env.w = tp.env.w + 1
tp.eval(tp.env.w)
assert(close(tp.env.w:sum():item(), sw + 512 * 256), "new w")
assert(close(old:sum():item(), sw), "the old version changed under its reader")

-- A failed evaluation leaves the previous value.
local cur = tp.env.w:sum():item()
local ok = pcall(function()
  tp.env.w = tp.env.w:reshape{256, 512}:matmul(tp.ones{3, 3})
end)
assert(not ok, "a bad rebind must fail")
assert(close(tp.env.w:sum():item(), cur), "a failed rebind changed w")

-- A region write moves at most the region.
local y = (tp.arange(0, 255) * 0 + 5):reshape{1, 256}:cast('f32')
before = tp.stats().bytes_moved
tp.env.w[{{1, 1}, {}}] = y
tp.eval(tp.env.w)
local moved = tp.stats().bytes_moved - before
assert(moved <= 256 * 4 * ranks, "a one-row write moved " .. moved .. " bytes")
assert(tp.env.w[{1, 1}]:item() == 5, "the region was written")
assert(close(tp.env.w:sum():item(), cur - (old[{{1, 1}, {}}] + 1):sum():item() + 5 * 256), "the rest is kept")

-- Dropping frees the name.
tp.env.v = nil
assert(tp.env.v == nil and #tp.tensors() == 1, "drop")
print("ok")
