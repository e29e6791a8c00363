-- W5: einsum("ij,jk,kl->il") on 2048x64, 64x2048, 2048x64 (issue 5, item 4). Prints the order
-- tp.einsum chose, its flops against the naive loop nest, and the median time of the einsum
-- next to the two explicit matmul orders.
--   tapestry bench/einsum/einsum.lua [reps] [dtype]        (default 7 f32)
-- Each run gets fresh inputs (a new seed), materialized before the clock starts, because
-- repeating an identical expression would only read back its cached value.
local reps = tonumber(arg and arg[1]) or 7
local dtype = arg and arg[2] or "f32"
local N, K = 2048, 64

local function inputs(seed)
  local a = tp.randn({N, K}, {seed = seed, dtype = dtype})
  local b = tp.randn({K, N}, {seed = seed + 1, dtype = dtype})
  local c = tp.randn({N, K}, {seed = seed + 2, dtype = dtype})
  return tp.eval(a, b, c)
end

local function median(ts)
  table.sort(ts)
  local n = #ts
  return n % 2 == 1 and ts[(n + 1) // 2] or (ts[n // 2] + ts[n // 2 + 1]) / 2
end

-- Median seconds of f(a, b, c) over `reps` runs after one warm-up run.
local seed = 1000
local function time(f)
  local ts = {}
  for r = 0, reps do
    seed = seed + 3
    local a, b, c = inputs(seed)
    local t0 = tp.clock()
    tp.eval(f(a, b, c))
    if r > 0 then ts[#ts + 1] = tp.clock() - t0 end
  end
  return median(ts)
end

local a, b, c = inputs(1)
local order, naive, flops = tp.einsum_path("ij,jk,kl->il", a, b, c)
local steps = {}
for _, s in ipairs(order) do steps[#steps + 1] = string.format("(%d,%d) %s", s[1], s[2], s.spec) end
print(string.format("W5 %s: ij,jk,kl->il on {%d,%d} {%d,%d} {%d,%d}", dtype, N, K, K, N, N, K))
print("order:        " .. table.concat(steps, "; "))
print(string.format("flops:        %.4g chosen vs %.4g naive (%.0fx fewer)", flops, naive, naive / flops))

local t_einsum = time(function(x, y, z) return tp.einsum("ij,jk,kl->il", x, y, z) end)
local t_good = time(function(x, y, z) return x:matmul(y:matmul(z)) end)
local t_bad = time(function(x, y, z) return x:matmul(y):matmul(z) end)
print(string.format("tp.einsum           median %8.3f ms over %d runs", t_einsum * 1e3, reps))
print(string.format("a @ (b @ c)         median %8.3f ms", t_good * 1e3))
print(string.format("(a @ b) @ c         median %8.3f ms", t_bad * 1e3))
