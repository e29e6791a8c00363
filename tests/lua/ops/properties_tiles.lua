-- Block-sparse tensors in whole tiles (docs/properties.md): a stored P lies split along its
-- tiles, output tiles that sum several tile products accumulate inside one batched matmul,
-- and the tile products are balanced by work across ranks. Every result equals the dense one.
-- Runs on 1 rank, 3 virtual ranks (plans verified), a simulated device and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, near, truthy = check.test, check.eq, check.near, check.truthy

local function maxdiff(x, y) return (x - y):abs():max():item() end
-- near(maxdiff(x, y), 0, tol) for every {x, y, tol, label}, in one observation (one plan).
local function all_near(cases)
  local ds = {}
  for i, c in ipairs(cases) do ds[i] = (c[1] - c[2]):abs():max() end
  tp.eval(table.unpack(ds))
  for i, c in ipairs(cases) do near(ds[i]:item(), 0, c[3], c[4]) end
end
local function held(name)  -- what tp.tensors() says the environment holds for a name
  for _, t in ipairs(tp.tensors()) do if t.name == name then return t end end
end
local function block_diagonal(n, t, seed)
  local g = n // t
  local pat = tp.eye(g):reshape{g, 1, g, 1}:expand{g, t, g, t}:reshape{n, n}
  return tp.randn({n, n}, {seed = seed}) * pat, tp.eye(g, {dtype = "bool"})
end

-- Bytes moved between ranks while f runs (transfers and combines; not gathers to rank 0).
local function moved(f)
  local a = tp.stats()
  f()
  local b = tp.stats()
  return b.bytes_transfers - a.bytes_transfers + b.bytes_combines - a.bytes_combines
end

test("a stored block-sparse P lies in whole tiles: a later matmul moves none of it", function()
  -- A checked declaration is computed whole on one rank; packing it by rows left P in quarter
  -- rows on 4 ranks (3/4 of it moved by the matmul) and split within tiles on 3.
  local x, mask = block_diagonal(256, 32, 40)
  tp.env.s = x:declare{tiles = {32, 32}, nonzero = mask}
  tp.eval(tp.env.s)
  truthy(held("s").layout:find("^split%(1,") or held("s").layout:find("^whole"), held("s").layout)
  local y = tp.randn({256, 256}, {seed = 41})  -- made where its rows are read
  eq(moved(function()
    tp.env.r = tp.env.s:matmul(y)
    tp.eval(tp.env.r)
  end), 0, "the matmul reads the stored tiles where they lie")
  near(maxdiff(tp.env.r, x:matmul(y)), 0, 1e-4)
  tp.env.s, tp.env.r = nil, nil
end)

-- A block-sparse n^2 matrix in t^2 tiles whose nonzero tiles are those of the bool grid `rows`.
local function sparse_of(rows, n, t, seed)
  local g = n // t
  local mask = tp.tensor(rows)
  local pat = mask:cast("f32"):reshape{g, 1, g, 1}:expand{g, t, g, t}:reshape{n, n}
  return tp.randn({n, n}, {seed = seed}) * pat, mask
end
local function grid(g, f)
  local rows = {}
  for i = 1, g do
    rows[i] = {}
    for j = 1, g do rows[i][j] = f(i, j) end
  end
  return rows
end
local function count(text, pattern)
  local k = 0
  for _ in text:gmatch(pattern) do k = k + 1 end
  return k
end

-- The multiply-adds each rank's batched matmuls do in a plan, from plan:blocks().
local function work_per_rank(plan)
  local per, rank = {}, nil
  for line in plan:blocks():gmatch("[^\n]+") do
    rank = tonumber(line:match("^rank (%d+):")) or rank
    local r = line:match("matmul (%[[%d%.x%[%]]+)")
    if r then
      local w = 1
      for lo, hi in r:gmatch("%[(%d+)%.%.(%d+)%]") do w = w * (hi - lo + 1) end
      per[rank] = (per[rank] or 0) + w
    end
  end
  return per
end

test("output tiles that sum several tile pairs accumulate inside one batched matmul", function()
  -- block-tridiagonal: an output tile sums 2 or 3 tile products (padded to 3: 1/11 more)
  local x, mask = sparse_of(grid(8, function(i, j) return math.abs(i - j) <= 1 end), 128, 16, 50)
  local s = x:declare{tiles = {16, 16}, nonzero = mask, trust = true}
  local y = tp.randn({128, 128}, {seed = 51})
  local text = tostring(tp.plan(s:matmul(y)))
  eq(count(text, "\n  matmul #"), 1, text)
  eq(count(text, "\n  add #") + count(text, "\n  fused_map #"), 0, "no adds of products: " .. text)
  tp.env.s = s
  local s2 = tp.env.s:matmul(tp.env.s)  -- block-sparse (pentadiagonal), 1 to 3 pairs a tile
  eq(count(tostring(tp.plan(s2)), "\n  add #"), 0)
  all_near{{s:matmul(y), x:matmul(y), 1e-4}, {y:matmul(s), y:matmul(x), 1e-4}, {s2, x:matmul(x), 1e-4},
           {s:t():matmul(s), x:t():matmul(x), 1e-4}}
  -- runs of very different lengths (4, 2, 1, 1 pairs): one einsum per length, no padding
  local u, umask = sparse_of(grid(8, function(i, j)
    return (i == 1 and j <= 4) or (i == 2 and (j == 1 or j == 5)) or (i == 3 and j == 3) or (i == 4 and j == 8)
  end), 128, 16, 52)
  local su = u:declare{tiles = {16, 16}, nonzero = umask, trust = true}
  local ut = tostring(tp.plan(su:matmul(y)))
  eq(count(ut, "\n  matmul #"), 3, ut)
  eq(work_per_rank(tp.plan(su:matmul(y), {mesh = 1}))[0], 8 * 16 * 16 * 128, "8 tile products, none padded")
  near(maxdiff(su:matmul(y), u:matmul(y)), 0, 1e-4)
  -- gradients through the accumulating product: the dense ones, projected onto the tiles
  local pat = mask:cast("f32"):reshape{8, 1, 8, 1}:expand{8, 16, 8, 16}:reshape{128, 128}
  local gs, gy = table.unpack(tp.grad((tp.env.s:matmul(y) * y):sum(), {tp.env.s, y}))
  local ds, dy = table.unpack(tp.grad((x:matmul(y) * y):sum(), {x, y}))
  all_near{{gs, ds * pat, 1e-3, "d/ds"}, {gy, dy, 1e-3, "d/dy"}}
  tp.env.s = nil
end)

test("8 nonzero tiles on 3 ranks: balanced by work, also when output tiles sum different counts", function()
  local y = tp.randn({256, 256}, {seed = 54})
  local tile = 32 * 32 * 256  -- one tile product's multiply-adds
  local cases = {
    diagonal = grid(8, function(i, j) return i == j end),
    uneven = grid(8, function(i, j)  -- output strips of 4, 2, 1 and 1 tile products
      return (i == 1 and j <= 4) or (i == 2 and (j == 1 or j == 5)) or (i == 3 and j == 3) or (i == 4 and j == 8)
    end)}
  for name, rows in pairs(cases) do
    local x, mask = sparse_of(rows, 256, 32, 55)
    local s = x:declare{tiles = {32, 32}, nonzero = mask, trust = true}
    local per = work_per_rank(tp.plan(s:matmul(y), {mesh = 3}))
    local total, most = 0, 0
    for r = 0, 2 do
      total = total + (per[r] or 0)
      most = math.max(most, per[r] or 0)
    end
    eq(total, 8 * tile, name .. ": the 8 tile products, no more")
    truthy(most <= 3 * tile, name .. ": the busiest rank does at most 3 of 8 tiles' work, got " .. most / tile)
    near(maxdiff(s:matmul(y), x:matmul(y)), 0, 1e-4, name)
  end
end)

check.summary()
