-- Declared properties (docs/properties.md): symmetry groups, x:declare and its check, x:dense,
-- x:nbytes, x:properties, the creators' symmetry option and what ops carry. Runs on 1 rank, 3
-- virtual ranks (plans verified), a simulated device and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, near, err = check.test, check.eq, check.near, check.check_error

local function groups(x)
  local out = {}
  for i, g in ipairs(x:properties().symmetry) do out[i] = tostring(g) end
  return out
end
local function f64(t) return tp.tensor(t, {dtype = "f64"}) end

test("groups", function()
  eq(tostring(tp.symmetric{1, 2}), "symmetric{1,2}")
  eq(tostring(tp.antisymmetric{3, 1}), "antisymmetric{3,1}")
  eq(tp.symmetric{1, 2}.kind, "symmetric")
  eq(tp.antisymmetric{1, 2}.dims, {1, 2})
  eq(tostring(tp.hermitian{1, 2}), "hermitian{1,2}")
  err(function() return tp.hermitian{1, 2, 3} end, "tp.hermitian", "a pair of dims")
  err(function() return tp.symmetric{1} end, "tp.symmetric", "at least 2 dims")
  err(function() return tp.symmetric{1, 0} end, "tp.symmetric", "positive integers")
end)

test("declare: checked when evaluated", function()
  local a = f64{{1, 2}, {5, 4}}
  local d = a:declare{symmetry = tp.symmetric{1, 2}}  -- lazy: no error yet
  eq(groups(d), {"symmetric{1,2}"})
  err(function() return d:totable() end, "tp.declare: x is not symmetric in dims 1,2 (max |x - x^T| = 3)")
  local t = a:declare{symmetry = tp.symmetric{1, 2}, trust = true}
  eq(t:totable(), {{1, 2}, {5, 4}})  -- trusted: not checked
  local s = f64{{1, 2}, {2, 4}}:declare{symmetry = tp.symmetric{1, 2}}
  eq(s:totable(), {{1, 2}, {2, 4}})
  local an = f64{{0, 2}, {-2, 0}}:declare{symmetry = tp.antisymmetric{1, 2}}
  eq(an:totable(), {{0, 2}, {-2, 0}})
  err(function() return f64{{1, 2}, {-2, 0}}:declare{symmetry = tp.antisymmetric{1, 2}}:totable() end,
      "x is not antisymmetric in dims 1,2 (max |x + x^T| = 2)")
  -- several groups; a 3-dim group checks every swap (dims 2,3 fail here)
  local x = tp.zeros({2, 2, 3, 3}) + tp.arange(1, 3):reshape{1, 1, 1, 3}
  err(function() return x:declare{symmetry = tp.symmetric{3, 4}}:sum():item() end,
      "not symmetric in dims 3,4")
  local c = tp.ones({2, 2, 2}, {dtype = "i32"}) * tp.arange(1, 2, {dtype = "i32"}):reshape{1, 1, 2}
  err(function() return c:declare{symmetry = tp.symmetric{1, 2, 3}}:sum():item() end,
      "not symmetric in dims 2,3 (max |x - x^T| = 1)")
  eq(groups(tp.randn({2, 2, 3, 3}):declare{symmetry = {tp.symmetric{1, 2}, tp.antisymmetric{3, 4}}, trust = true}),
     {"symmetric{1,2}", "antisymmetric{3,4}"})
end)

test("declare: bad declarations name the shapes", function()
  local x = tp.zeros{3, 4}
  err(function() return x:declare{symmetry = tp.symmetric{1, 2}} end,
      "tp.declare", "equal sizes", "{3,4}")
  err(function() return x:declare{symmetry = tp.symmetric{1, 3}} end, "tp.declare", "dim 3 is out of range", "{3,4}")
  err(function() return tp.zeros{3, 3, 3}:declare{symmetry = {tp.symmetric{1, 2}, tp.symmetric{2, 3}}} end,
      "share a dim")
  err(function() return x:declare{} end, "tp.declare", "nothing to declare")
  err(function() return x:declare{symmetry = 3} end, "tp.declare", "option 'symmetry'")
  err(function() return x:declare{symetry = tp.symmetric{1, 2}} end, "tp.declare", "symetry")
end)

test("creators", function()
  local r = tp.randn({5, 5}, {symmetry = tp.symmetric{1, 2}, seed = 7})
  local v = r:totable()
  for i = 1, 5 do for j = 1, 5 do eq(v[i][j], v[j][i]) end end
  eq(v[1][2], tp.randn({5, 5}, {seed = 7}):totable()[1][2], "the upper triangle is randn's")
  local q = tp.rand({4, 4}, {symmetry = tp.antisymmetric{1, 2}, seed = 2}):totable()
  for i = 1, 4 do
    eq(q[i][i], 0)
    for j = 1, 4 do eq(q[i][j], -q[j][i]) end
  end
  eq(groups(tp.zeros({3, 3}, {symmetry = tp.antisymmetric{1, 2}})), {"antisymmetric{1,2}"})
  eq(groups(tp.ones({3, 3}, {symmetry = tp.symmetric{1, 2}})), {"symmetric{1,2}"})
  err(function() return tp.ones({3, 3}, {symmetry = tp.antisymmetric{1, 2}}) end, "tp.ones", "only 0 is antisymmetric")
  err(function() return tp.eye(3, {symmetry = tp.antisymmetric{1, 2}}) end, "tp.eye", "not antisymmetric")
  err(function() return tp.randn({3, 4}, {symmetry = tp.symmetric{1, 2}}) end, "tp.randn", "equal sizes", "{3,4}")
  err(function() return tp.arange(1, 3, {symmetry = tp.symmetric{1, 2}}) end, "tp.arange", "out of range")
  local t = tp.tensor({{1, 2}, {3, 1}}, {symmetry = tp.symmetric{1, 2}})
  err(function() return t:totable() end, "not symmetric in dims 1,2 (max |x - x^T| = 1)")
end)

test("zeros and eye carry their structure", function()
  local z = tp.zeros{4, 4}
  eq(z:properties().zero, true)
  eq(z:nbytes(), 0)
  eq(groups(z), {"symmetric{1,2}"})
  local e = tp.eye(4, {dtype = "f64"})
  eq(e:properties().diagonal, true)
  eq(groups(e), {"symmetric{1,2}"})
  eq(e:nbytes(), 4 * 8)
  eq(tp.eye(3, 4):properties().symmetry, {})
  eq(tp.zeros{4, 4}:dense():properties().zero, false)
  eq(tp.zeros{4, 4}:dense():nbytes(), 64)
end)

test("nbytes and dense", function()
  local s = tp.randn({256, 256}, {symmetry = tp.symmetric{1, 2}})
  eq(s:nbytes(), 136 * 16 * 16 * 4, "16x16 tiles of 16^2, the 136 with I <= J held")
  truthy = s:nbytes() <= 0.55 * 256 * 256 * 4
  check.truthy(truthy, "a symmetric 256^2 tensor stores at most 0.55x the dense bytes")
  eq(s:dense():nbytes(), 256 * 256 * 4)
  eq(s:dense():properties().symmetry, {})
  near(s:dense():sum():item(), s:sum():item(), 1e-3)
  local a = tp.randn({6, 6, 6}, {dtype = "f64"}):declare{symmetry = tp.antisymmetric{1, 2, 3}, trust = true}
  eq(a:nbytes(), 20 * 8)  -- C(6, 3)
  eq(a:properties().stored, 20)
  eq(tp.randn({3, 3, 2}):declare{symmetry = tp.symmetric{1, 2}, trust = true}:nbytes(), 6 * 2 * 4)
  eq(tp.ones{2, 3}:nbytes(), 24)
end)

test("propagation", function()
  local s = tp.randn({4, 4}, {symmetry = tp.symmetric{1, 2}})
  local a = tp.randn({4, 4}, {symmetry = tp.antisymmetric{1, 2}})
  eq(groups(s * 2), {"symmetric{1,2}"})
  eq(groups(2 + s), {"symmetric{1,2}"})
  eq(groups(s:exp()), {"symmetric{1,2}"})
  eq(groups(s:t()), {"symmetric{1,2}"})
  eq(groups(a * 3), {"antisymmetric{1,2}"})
  eq(groups(a / 3), {"antisymmetric{1,2}"})
  eq(groups(-a), {"antisymmetric{1,2}"})
  eq(groups(a:tanh()), {"antisymmetric{1,2}"})
  eq(groups(a:abs()), {"symmetric{1,2}"})
  eq(groups(a:exp()), {})
  eq(groups(a + 1), {})
  eq(groups(a + a), {"antisymmetric{1,2}"})
  eq(groups(a * a), {"symmetric{1,2}"})
  eq(groups(s + a), {})
  eq(groups(s:cast("i32")), {"symmetric{1,2}"})
  local x = tp.randn{4, 4}
  eq(groups(x), {})
  eq(groups(x + x:t()), {"symmetric{1,2}"})
  eq(groups(x:t() * x), {"symmetric{1,2}"})
  eq(groups(x - x:t()), {"antisymmetric{1,2}"})
  local y = tp.randn{2, 4, 3, 4}
  eq(groups(y + y:transpose(2, 4)), {"symmetric{2,4}"})
  local p = tp.randn({3, 3, 2}):declare{symmetry = tp.symmetric{1, 2}, trust = true}
  eq(groups(p:permute{3, 1, 2}), {"symmetric{2,3}"})
  local d = s
  for _ = 1, 40 do d = d + d end  -- shared inputs are visited once
  eq(groups(d), {"symmetric{1,2}"})
  local deep = x + x:t()
  for _ = 1, 20000 do deep = deep * 1 end  -- a long history is not walked: nothing claimed
  eq(groups(deep), {})
  local packed = s  -- a packed tensor's maps are unpack(f(P)): known at any depth
  for _ = 1, 200 do packed = packed * 1 end
  eq(groups(packed), {"symmetric{1,2}"})
  eq(deep:matmul(deep).shape, {4, 4})
  -- what is derived holds: the values agree
  local v = (x - x:t()):declare{symmetry = tp.antisymmetric{1, 2}}
  near(v:totable(), (x - x:t()):totable(), 0)
end)

test("tp.env keeps the properties", function()
  tp.env.sym = tp.randn({6, 6}, {symmetry = tp.symmetric{1, 2}})
  eq(groups(tp.env.sym), {"symmetric{1,2}"})
  tp.eval(tp.env.sym)
  eq(groups(tp.env.sym), {"symmetric{1,2}"})
  eq(tp.env.sym:nbytes(), 21 * 4)
  local v = tp.env.sym:totable()
  for i = 1, 6 do for j = 1, 6 do eq(v[i][j], v[j][i]) end end
  tp.env.sym = tp.env.sym * 2  -- carried through a rebind
  tp.eval(tp.env.sym)
  eq(groups(tp.env.sym), {"symmetric{1,2}"})
  tp.env.bad = f64{{1, 2}, {3, 4}}:declare{symmetry = tp.symmetric{1, 2}}
  err(function() return tp.eval(tp.env.bad) end, "not symmetric")
  eq(tp.env.bad, nil, "a failed declaration binds nothing")
  tp.env.sym = nil
end)

test("planning and gradients", function()
  local x = tp.randn({8, 8}, {dtype = "f64"})
  local s = (x + x:t()):declare{symmetry = tp.symmetric{1, 2}}
  near((s:matmul(s)):totable(), ((x + x:t()):matmul(x + x:t())):totable(), 1e-9)
  local checked = f64{{1, 2}, {2, 1}}:declare{symmetry = tp.symmetric{1, 2}}
  near((checked * 3):sum():item(), 18, 0)
  local w = tp.randn({3, 3}, {dtype = "f64"})
  local g = tp.grad((w:declare{symmetry = tp.symmetric{1, 2}, trust = true} * w):sum(), {w})[1]
  near(g:totable(), (w * 2):totable(), 1e-12)
end)

test("block sparsity", function()
  local mask = tp.tensor{{true, false}, {false, true}}
  local pattern = tp.tensor{{1, 1, 0, 0}, {1, 1, 0, 0}, {0, 0, 1, 1}, {0, 0, 1, 1}}:ne(0)
  local x = tp.where(pattern, tp.randn({4, 4}, {seed = 5}), 0)
  local b = x:declare{tiles = {2, 2}, nonzero = mask}
  eq(b:nbytes(), 8 * 4)
  eq(b:properties().tiles, {2, 2})
  eq(b:properties().nonzero:totable(), {{true, false}, {false, true}})
  near(b:totable(), x:totable(), 0)
  eq((b * 2):nbytes(), 32)
  eq(b:exp():nbytes(), 64, "exp(0) = 1: not sparse")
  eq((b + b):nbytes(), 32)
  eq(b:dense():nbytes(), 64)
  err(function() return tp.randn{4, 4}:declare{tiles = {2, 2}, nonzero = mask}:totable() end,
      "tp.declare: x is not zero outside its nonzero tiles (tile {1,2} is declared zero")
  err(function() return x:declare{tiles = {2, 2}, nonzero = tp.tensor{true, false}} end,
      "tp.declare", "tile grid's shape {2,2}", "shape {4,4} in tiles {2,2}", "got bool {2}")
  err(function() return x:declare{tiles = {2, 2}, nonzero = pattern:cast("f32")} end, "got f32 {4,4}")
  err(function() return x:declare{tiles = {2, 2}} end, "needs both tiles")
  err(function() return x:declare{tiles = {2}, nonzero = mask} end, "one extent per dim")
  -- edge tiles are clipped; a transpose moves the grid
  local c = x:declare{tiles = {3, 2}, nonzero = tp.tensor{{true, false}, {true, true}}, trust = true}
  eq(c:nbytes(), 3 * 3 * 2 * 4, "held: three tiles, edge tiles padded to 3x2")
  eq(c:t():properties().nonzero:totable(), {{true, true}, {false, true}})
  eq(c:t():properties().tiles, {2, 3})
  -- block-diagonal 512^2 in 64^2 tiles: 1/8 of the dense bytes
  local bd = tp.eye(8, {dtype = "bool"})
  local big = tp.randn{512, 512}:declare{tiles = {64, 64}, nonzero = bd, trust = true}
  eq(big:nbytes(), 8 * 64 * 64 * 4)
  tp.env.sparse = b
  tp.eval(tp.env.sparse)
  eq(tp.env.sparse:nbytes(), 32, "tp.env keeps the tiles")
  tp.env.sparse = nil
end)

test("block-sparse matmul visits only nonzero tiles", function()
  -- 10x7 in tiles {4,3}: a 3x3 grid with clipped edges, row block 2 all zero
  local m = tp.tensor{{true, false, true}, {false, false, false}, {false, true, true}}
  local cover = m:cast("f64"):reshape{3, 1, 3, 1}:expand{3, 4, 3, 3}:reshape{12, 9}[{{1, 10}, {1, 7}}]
  local a = tp.randn({10, 7}, {dtype = "f64", seed = 3}) * cover
  local s = a:declare{tiles = {4, 3}, nonzero = m}
  local b = tp.randn({7, 5}, {dtype = "f64", seed = 4})
  local p = s:matmul(b)
  near(p:totable(), a:matmul(b):totable(), 1e-12)
  eq(p:properties().tiles, {4, 5})
  eq(p:properties().nonzero:totable(), {{true}, {false}, {true}})
  eq(p:nbytes(), 2 * 4 * 5 * 8)  -- two tiles of 4x5 held (the edge one padded)
  local w = tp.randn({7, 5}, {dtype = "f64", seed = 6})
  local c = tp.randn({10, 5}, {dtype = "f64", seed = 7})
  local g = tp.grad((s:matmul(w) * c):sum(), {w})[1]
  near(g:totable(), a:t():matmul(c):totable(), 1e-12)
  -- issue 25's bar: a block-diagonal 512^2 matmul in 64^2 tiles plans at most 0.2x the dense flops
  local bd = tp.eye(8, {dtype = "bool"})
  local pat = tp.eye(8):reshape{8, 1, 8, 1}:expand{8, 64, 8, 64}:reshape{512, 512}
  local x = tp.randn({512, 512}, {seed = 1}) * pat
  local y = tp.randn({512, 512}, {seed = 2})
  local sx = x:declare{tiles = {64, 64}, nonzero = bd}
  local fs = tp.plan(sx:matmul(y), {mesh = 1}):cost().flops
  local fd = tp.plan(x:matmul(y), {mesh = 1}):cost().flops
  check.truthy(fs <= 0.2 * fd, "planned flops " .. fs .. " vs dense " .. fd)
  check.truthy(sx:nbytes() <= 0.2 * x:nbytes())
  near((sx:matmul(y) - x:matmul(y)):abs():max():item(), 0, 1e-4)
end)

check.summary()
