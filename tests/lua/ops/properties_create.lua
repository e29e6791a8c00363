-- Creators with declared properties (docs/properties.md, "Creators take block sparsity"):
-- tiles and nonzero on tp.randn / tp.rand / tp.tensor / tp.ones / tp.full, and tp.zeros and
-- tp.eye carrying their structure; every value equals the same creator's dense one.
-- Runs on 1 rank, 3 virtual ranks (plans verified), a simulated device and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, near, err, truthy = check.test, check.eq, check.near, check.check_error, check.truthy

local function maxdiff(x, y) return (x - y):abs():max():item() end
local function held(name)
  for _, t in ipairs(tp.tensors()) do if t.name == name then return t end end
end
-- The dense 0/1 pattern of a block mask m {g, g} in tiles of t.
local function pattern(m, t)
  local g1, g2 = m.shape[1], m.shape[2]
  return m:cast("f64"):reshape{g1, 1, g2, 1}:expand{g1, t, g2, t}:reshape{g1 * t, g2 * t}
end

test("tp.randn and tp.rand: the nonzero tiles of the plain call", function()
  local mask = tp.tensor({{true, false, false, true}, {false, true, false, false},
                          {false, false, true, false}, {true, false, false, true}})
  for _, f in ipairs{"randn", "rand"} do
    local r = tp[f]({64, 64}, {tiles = {16, 16}, nonzero = mask, seed = 3, dtype = "f64"})
    local plain = tp[f]({64, 64}, {seed = 3, dtype = "f64"})
    eq(r:nbytes(), 6 * 16 * 16 * 8, f .. ": 6 tiles held")
    eq(r:properties().tiles, {16, 16})
    eq(r:properties().nonzero:totable(), mask:totable())
    near(maxdiff(r, plain * pattern(mask, 16)), 0, 0, f)
  end
  -- named: only the nonzero tiles are kept
  tp.env.q = tp.randn({64, 64}, {tiles = {16, 16}, nonzero = mask, seed = 4})
  eq(held("q").packed, true)
  eq(held("q").bytes, 6 * 16 * 16 * 4)
  near(maxdiff(tp.env.q, tp.randn({64, 64}, {seed = 4}) * pattern(mask, 16):cast("f32")), 0, 0)
  tp.env.q = nil
  -- edge tiles, and a symmetric mask with a symmetry group
  local m2 = tp.tensor({{true, false}, {false, true}})
  local s = tp.randn({10, 10}, {tiles = {6, 6}, nonzero = m2, symmetry = tp.symmetric{1, 2}, seed = 5})
  local sd = s:dense()
  near(maxdiff(sd, sd:t()), 0, 0, "symmetric")
  eq(sd[{{1, 6}, {7, 10}}]:abs():max():item(), 0, "zero tile")
  eq(tostring(s:properties().symmetry[1]), "symmetric{1,2}")
  -- no nonzero tile: zeros, holding nothing
  local z = tp.randn({8, 8}, {tiles = {4, 4}, nonzero = tp.zeros({2, 2}, {dtype = "bool"}), seed = 6})
  eq(z:abs():max():item(), 0)
  eq(z:nbytes(), 0)
end)

test("tp.tensor, tp.ones, tp.full: declared, checked", function()
  local t = tp.tensor({{1, 0}, {0, 4}}, {tiles = {1, 1}, nonzero = tp.eye(2, {dtype = "bool"})})
  eq(t:sum():item(), 5)
  local bad = tp.tensor({{1, 2}, {3, 4}}, {tiles = {1, 1}, nonzero = tp.eye(2, {dtype = "bool"})})
  err(function() return bad:sum():item() end, "tp.declare: x is not zero outside its nonzero tiles",
      "tile {2,1} is declared zero, max |x| there = 3")
  local all = tp.ones({2, 2}, {dtype = "bool"})
  eq(tp.ones({4, 4}, {tiles = {2, 2}, nonzero = all}):sum():item(), 16)
  eq(tp.full({4, 4}, 0, {tiles = {2, 2}, nonzero = tp.eye(2, {dtype = "bool"})}):properties().zero, true)
  err(function() return tp.ones({4, 4}, {tiles = {2, 2}, nonzero = tp.eye(2, {dtype = "bool"})}) end,
      "tp.ones", "a constant 1 is not zero in tile {1,2}", "only 0 has zero tiles")
  err(function() return tp.full({4, 4}, 7, {tiles = {2, 2}, nonzero = tp.eye(2, {dtype = "bool"})}) end,
      "tp.full", "a constant 7")
  err(function() return tp.randn({4, 4}, {tiles = {2, 2}}) end, "tp.randn", "needs both tiles")
  err(function() return tp.ones({4, 4}, {nonzero = all}) end, "tp.ones", "needs both tiles")
  err(function() return tp.randn({4, 4}, {tiles = {2}, nonzero = all}) end, "tp.randn", "one extent per dim")
  err(function() return tp.randn({4, 4}, {tiles = {2, 0}, nonzero = all}) end, "tp.randn")
  err(function() return tp.randn({4, 4}, {tiles = {2, 2}, nonzero = tp.ones({3, 2}, {dtype = "bool"})}) end,
      "tp.randn", "tile grid's shape {2,2}")
  err(function()
    return tp.randn({4, 4}, {tiles = {2, 2}, nonzero = tp.tensor({{true, true}, {false, true}}),
                             symmetry = tp.symmetric{1, 2}})
  end, "tp.randn", "nonzero is not symmetric{1,2}", "tile {1,2} and tile {2,1} differ")
end)

test("tp.zeros and tp.eye carry their structure", function()
  local z = tp.zeros({64, 64}, {tiles = {16, 16}})
  eq(z:properties().zero, true)
  eq(z:properties().tiles, {16, 16})
  eq(z:properties().nonzero:any():item(), false, "no nonzero tile")
  eq(z:nbytes(), 0)
  local e = tp.eye(64, {tiles = {16, 16}})
  eq(e:properties().diagonal, true)
  eq(e:properties().nonzero:totable(), tp.eye(4, {dtype = "bool"}):totable(), "the diagonal's tiles")
  near(maxdiff(e, tp.eye(64)), 0, 0)
  -- a rectangular identity in uneven tiles: the tiles its diagonal crosses
  eq(tp.eye(10, 7, {tiles = {4, 3}}):properties().nonzero:totable(),
     {{true, true, false}, {false, true, true}, {false, false, false}})
  err(function() return tp.eye(8, {tiles = {4, 4}, nonzero = tp.tensor({{true, true}, {false, false}})}) end,
      "tp.eye", "the identity's diagonal crosses tile {2,2}, which nonzero declares zero")
  -- used: eye @ x visits the diagonal tile pairs only, and z + x keeps x's tiles
  local x = tp.randn({64, 64}, {tiles = {16, 16}, nonzero = tp.eye(4, {dtype = "bool"}), seed = 7})
  tp.env.y = tp.randn({64, 256}, {seed = 8})
  local y = tp.env.y
  near(maxdiff(e:matmul(y), y), 0, 0)
  local fe = tp.plan(e:matmul(y)):cost().flops  -- 4 of 16 tile pairs, and the identity's tiles
  local fd = tp.plan(tp.eye(64):matmul(y)):cost().flops
  truthy(fe <= 0.3 * fd, "eye @ y plans " .. fe .. " flops, the dense identity " .. fd)
  tp.env.y = nil
  local zx = tp.zeros({64, 64}, {tiles = {16, 16}, nonzero = tp.eye(4, {dtype = "bool"})}) + x
  eq(zx:properties().tiles, {16, 16})
  near(maxdiff(zx, x:dense()), 0, 0)
end)

check.summary()
