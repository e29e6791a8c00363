-- A block-sparse matmul (issue 25): a block-diagonal n x n f32 matrix declared in t x t tiles
-- (1/(n/t) of the tiles nonzero) times a dense one, against the same product undeclared.
-- With a band w > 0 the nonzero tiles are those within w of the diagonal, so an output tile
-- sums up to 2w+1 tile products (accumulated in one gemm: packed_contract.cpp).
-- The declared matrix is bound to a name, so the environment keeps only its nonzero tiles.
-- Prints the planned flops, the bytes held and the best of 5 timings of each.
--   tapestry bench/tile_matmul.lua [n=2048] [t=256] [w=0]   (docs/properties.md has the results)
local n, t, w = tonumber(arg[1]) or 2048, tonumber(arg[2]) or 256, tonumber(arg[3]) or 0
local g = n // t
local rows = {}
for i = 1, g do
  rows[i] = {}
  for j = 1, g do rows[i][j] = math.abs(i - j) <= w end
end
local mask = tp.tensor(rows)
local pattern = mask:cast("f32"):reshape{g, 1, g, 1}:expand{g, t, g, t}:reshape{n, n}
local a = tp.eval(tp.randn({n, n}, {seed = 1}) * pattern)
local b = tp.eval(tp.randn({n, n}, {seed = 2}))
tp.env.s = a:declare{tiles = {t, t}, nonzero = mask, trust = true}
local s = tp.eval(tp.env.s)
local held = 0
for _, row in ipairs(tp.tensors()) do if row.name == "s" then held = row.bytes end end

local fs = tp.plan(s:matmul(b)):cost().flops
local fd = tp.plan(a:matmul(b)):cost().flops
local err = (s:matmul(b) - a:matmul(b)):abs():max():item()
-- b is scaled differently every run: a new node each time, never a cached value.
local function best(x)
  local time = math.huge
  for r = 1, 5 do
    local c0 = tp.clock()
    tp.eval(x:matmul(b * (1 + r / 1000)):sum())
    time = math.min(time, tp.clock() - c0)
  end
  return time
end
local ts, td = best(s), best(a)
print(string.format("n=%d tiles=%d band=%d: planned flops %.3g sparse / %.3g dense = %.3f", n, t, w, fs, fd, fs / fd))
print(string.format("bytes %d held / %d dense = %.3f", held, a:nbytes(), held / a:nbytes()))
print(string.format("time %.4f s sparse / %.4f s dense = %.3f (max |difference| %.3g)", ts, td, ts / td, err))
