-- Blocks retried after injected transient failures give the same values: compare_faults.cmake
-- runs this without faults and with TAPESTRY_BLOCK_FAULT (argument "faulty"), on one rank,
-- virtual ranks and under mpirun, and the two outputs must be equal.
local faulty = arg and arg[1] == "faulty"
local function show(name, t) print(string.format("%s %.17g", name, t:sum():item())) end

local x = tp.rand({64, 48}, {seed = 3})
local w = tp.randn({48, 32}, {seed = 4})
local h = tp.tanh(x:matmul(w))
show("tanh(x w)", h)
show("row sums", (h * h):sum(2))
tp.env.u = tp.stencil(tp.rand({40, 40}, {seed = 5}), {{0, 1, 0}, {1, -4, 1}, {0, 1, 0}})
for _ = 1, 3 do tp.env.u = tp.env.u * 0.5 + tp.exp(tp.env.u * 0.01) end
show("stencil loop", tp.env.u)
show("max", x:max(1))

local retries = tp.stats().block_retries
if faulty then
  assert(retries > 0, "TAPESTRY_BLOCK_FAULT is set, but no block was retried")
else
  assert(retries == 0, "a block was retried without injected faults")
end
