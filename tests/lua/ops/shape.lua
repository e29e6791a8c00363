-- Shape ops: reshape permute t transpose expand squeeze unsqueeze flatten cat stack.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, eq, same = check.test, check.eq, check.same

local seed = 500
local function each_dtype(name, fn)
  for _, dt in ipairs(ref.dtypes) do
    seed = seed + 10
    local s = seed
    test(name .. "." .. dt, function() fn(dt, s) end)
  end
end

each_dtype("reshape", function(dt, s)
  local x, r = gen.pair({2, 3, 4}, dt, s)
  for _, shape in ipairs{{24}, {4, 6}, {4, -1}, {-1, 2, 3}, {2, 3, 4}, {1, 24, 1}, {2, 2, 2, 3}} do
    same(x:reshape(shape), ref.reshape(r, shape), nil, check.show(shape))
  end
  local y, ry = gen.pair({5, 7}, dt, s + 1)
  same(y:reshape{7, 5}, ref.reshape(ry, {7, 5}), nil, "prime sizes")
  same(y:t():reshape{35}, ref.reshape(ref.transpose(ry, 1, 2), {35}), nil, "of a transpose")
  local z, rz = gen.pair({}, dt, s + 2)
  same(z:reshape{1, 1}, ref.reshape(rz, {1, 1}), nil, "scalar to {1,1}")
  same(z:reshape{1, 1}:reshape{}, rz, nil, "back to a scalar")
end)

each_dtype("permute", function(dt, s)
  local x, r = gen.pair({2, 3, 4}, dt, s)
  for _, p in ipairs{{1, 2, 3}, {3, 1, 2}, {2, 3, 1}, {3, 2, 1}} do
    same(x:permute(p), ref.permute(r, p), nil, check.show(p))
  end
  same(x:permute{3, 1, 2}:permute{2, 3, 1}, r, nil, "inverse permutations")
end)

test("permute.negative_dims", function()
  local x, r = gen.pair({2, 3, 4}, "f32", 555)
  same(x:permute{-1, 1, 2}, ref.permute(r, {-1, 1, 2}), nil, "{-1,1,2}")
  same(x:permute{-1, -2, -3}, ref.permute(r, {3, 2, 1}), nil, "{-1,-2,-3}")
end)

each_dtype("transpose", function(dt, s)
  local x, r = gen.pair({3, 5}, dt, s)
  same(x:t(), ref.transpose(r, 1, 2), nil, "t")
  same(x:t():t(), r, nil, "t twice")
  local y, ry = gen.pair({2, 3, 4}, dt, s + 1)
  same(y:transpose(1, 3), ref.transpose(ry, 1, 3), nil, "1,3")
  same(y:transpose(-1, -2), ref.transpose(ry, 3, 2), nil, "-1,-2")
  same(y:transpose(2, 2), ry, nil, "same dim")
end)

each_dtype("expand", function(dt, s)
  local x, r = gen.pair({3, 1}, dt, s)
  same(x:expand{3, 4}, ref.expand(r, {3, 4}), nil, "{3,4}")
  same(x:expand{2, 3, 4}, ref.expand(r, {2, 3, 4}), nil, "new leading dim")
  same(x:expand{-1, 5}, ref.expand(r, {-1, 5}), nil, "-1 keeps a dim")
  same(x:expand{3, 1}, r, nil, "same shape")
  local y, ry = gen.pair({}, dt, s + 1)
  same(y:expand{2, 2}, ref.expand(ry, {2, 2}), nil, "scalar")
end)

each_dtype("squeeze_unsqueeze", function(dt, s)
  local x, r = gen.pair({1, 3, 1, 2}, dt, s)
  same(x:squeeze(), ref.squeeze(r), nil, "all")
  same(x:squeeze(1), ref.squeeze(r, 1), nil, "1")
  same(x:squeeze(3), ref.squeeze(r, 3), nil, "3")
  same(x:squeeze(-2), ref.squeeze(r, -2), nil, "-2")
  local y, ry = gen.pair({3, 2}, dt, s + 1)
  same(y:unsqueeze(1), ref.unsqueeze(ry, 1), nil, "unsqueeze 1")
  same(y:unsqueeze(2), ref.unsqueeze(ry, 2), nil, "unsqueeze 2")
  same(y:unsqueeze(3), ref.unsqueeze(ry, 3), nil, "unsqueeze 3 (after the last)")
  same(y:unsqueeze(-1), ref.unsqueeze(ry, 3), nil, "unsqueeze -1 (after the last)")
  same(y:unsqueeze(1):squeeze(1), ry, nil, "round trip")
  local z, rz = gen.pair({1, 1}, dt, s + 2)
  same(z:squeeze(), ref.squeeze(rz), nil, "to a scalar")
end)

each_dtype("flatten", function(dt, s)
  local x, r = gen.pair({2, 3, 4}, dt, s)
  same(x:flatten(), ref.flatten(r))
  same(x:permute{3, 1, 2}:flatten(), ref.flatten(ref.permute(r, {3, 1, 2})), nil, "of a permute")
  local z, rz = gen.pair({}, dt, s + 1)
  same(z:flatten(), ref.reshape(rz, {1}), nil, "scalar")
end)

each_dtype("cat", function(dt, s)
  local a, ra = gen.pair({2, 3}, dt, s)
  local b, rb = gen.pair({4, 3}, dt, s + 1)
  local c, rc = gen.pair({2, 5}, dt, s + 2)
  same(tp.cat({a, b}, 1), ref.cat({ra, rb}, 1), nil, "dim 1")
  same(tp.cat({a, c}, 2), ref.cat({ra, rc}, 2), nil, "dim 2")
  same(tp.cat({a, c, a}, -1), ref.cat({ra, rc, ra}, -1), nil, "dim -1, three")
  same(tp.cat({a}, 1), ra, nil, "one tensor")
  local v, rv = gen.pair({3}, dt, s + 3)
  local w, rw = gen.pair({7}, dt, s + 4)
  same(tp.cat({v, w, v}, 1), ref.cat({rv, rw, rv}, 1), nil, "1-D")
  local p, rp = gen.pair({2, 3, 4}, dt, s + 5)
  local q, rq = gen.pair({2, 1, 4}, dt, s + 6)
  same(tp.cat({p, q}, 2), ref.cat({rp, rq}, 2), nil, "3-D middle")
end)

test("cat.promotes", function()
  local a, ra = gen.pair({2}, "i32", 590)
  local b, rb = gen.pair({3}, "f32", 591)
  local c, rc = gen.pair({1}, "bool", 592)
  local y = tp.cat({a, b, c}, 1)
  eq(y.dtype, "f64")
  same(y, ref.cat({ra, rb, rc}, 1))
end)

each_dtype("stack", function(dt, s)
  local a, ra = gen.pair({2, 3}, dt, s)
  local b, rb = gen.pair({2, 3}, dt, s + 1)
  same(tp.stack({a, b}, 1), ref.stack({ra, rb}, 1), nil, "dim 1")
  same(tp.stack({a, b, a}, 2), ref.stack({ra, rb, ra}, 2), nil, "dim 2")
  same(tp.stack({a, b}, 3), ref.stack({ra, rb}, 3), nil, "dim 3 (new last)")
  same(tp.stack({a, b}, -1), ref.stack({ra, rb}, 3), nil, "dim -1 (new last)")
  local x, rx = gen.pair({}, dt, s + 2)
  same(tp.stack({x, x}, 1), ref.stack({rx, rx}, 1), nil, "scalars")
end)

test("shape.compose_with_maps", function()
  local a, ra = gen.pair({3, 4}, "f32", 600)
  local b, rb = gen.pair({4, 3}, "f32", 601)
  same(a + b:t(), ref.binary("add", ra, ref.transpose(rb, 1, 2)), nil, "a + b:t()")
  same((a:reshape{2, 6} * 2):permute{2, 1},
       ref.permute(ref.binary("mul", ref.reshape(ra, {2, 6}), 2), {2, 1}), nil, "map between views")
  same(a:unsqueeze(1):expand{2, 3, 4} - a, ref.binary("sub", ref.expand(ra, {2, 3, 4}), ra), nil, "expand - a")
  same(tp.cat({a, b:t()}, 1):sum(1), ref.reduce("sum", ref.cat({ra, ref.transpose(rb, 1, 2)}, 1), 1),
       nil, "cat then sum")
end)

test("shape.medium", function()
  -- a permute larger than the parallel copy threshold (1 MiB)
  local x = tp.rand({3, 400, 300}, {seed = 610})
  local r = ref.of(x)
  same(x:permute{3, 1, 2}:reshape{300, -1}, ref.reshape(ref.permute(r, {3, 1, 2}), {300, -1}))
  same(tp.cat({x, x * 2}, 2):sum(2), ref.reduce("sum", ref.cat({r, ref.binary("mul", r, 2)}, 2), 2), 1e-4)
end)

check.summary()
