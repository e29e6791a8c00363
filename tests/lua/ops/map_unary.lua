-- Unary maps, cast and logical_not: every op on every dtype it applies to.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, eq, same = check.test, check.eq, check.same

-- Input ranges where each op is defined and well conditioned.
local DOMAIN = {
  log = {0.1, 5, 1, 9}, sqrt = {0, 5, 0, 9}, rsqrt = {0.1, 5, 1, 9},
  reciprocal = {0.25, 4, 1, 9}, exp = {-4, 4, -5, 5}, gelu = {-3, 3, -3, 3},
}
local NO_BOOL = {neg = true, sign = true, floor = true, ceil = true, round = true}

local seed = 0
for _, name in ipairs(ref.unary_names) do
  for _, dt in ipairs(ref.dtypes) do
    if not (dt == "bool" and NO_BOOL[name]) then
      seed = seed + 1
      local s = seed
      test(name .. "." .. dt, function()
        local d = DOMAIN[name] or {-5, 5, -9, 9}
        local int = dt == "i32" or dt == "i64"
        local x, r = gen.pair({3, 7}, dt, s, int and d[3] or d[1], int and d[4] or d[2])
        local want = ref.unary(name, r)
        same(tp[name](x), want, nil, "tp." .. name)
        same(x[name](x), want, nil, "x:" .. name)
      end)
    end
  end
end

test("neg.metamethod", function()
  for _, dt in ipairs{"f32", "f64", "i32", "i64"} do
    local x, r = gen.pair({4, 5}, dt, 3)
    same(-x, ref.unary("neg", r), nil, dt)
  end
end)

test("unary.scalar_and_1d", function()
  same(tp.exp(tp.tensor(1.5)), ref.unary("exp", ref.tensor(1.5)))
  local x, r = gen.pair({11}, "f64", 5)
  same(tp.tanh(x), ref.unary("tanh", r))
end)

test("unary.composed", function()
  local x, r = gen.pair({2, 3, 5}, "f32", 9)
  local want = ref.unary("sigmoid", ref.unary("abs", ref.unary("sin", r)))
  same(tp.sigmoid(tp.abs(tp.sin(x))), want)
  same(x:sin():abs():sigmoid(), want)
end)

test("round.half_even", function()
  local t = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, 3.7, -3.7}
  for _, dt in ipairs{"f32", "f64"} do
    same(tp.round(tp.tensor(t, {dtype = dt})), ref.unary("round", ref.tensor(t, dt)), nil, dt)
  end
  eq(tp.round(tp.tensor{-2.5, 2.5, 3.5}):totable(), {-2, 2, 4})
end)

test("floor_ceil.negative", function()
  eq(tp.floor(tp.tensor{-1.5, 1.5, -0.25}):totable(), {-2, 1, -1})
  eq(tp.ceil(tp.tensor{-1.5, 1.5, -0.25}):totable(), {-1, 2, 0})
end)

test("nonfinite", function()
  local s = tp.sqrt(tp.tensor{-1, 4}):totable()
  check.truthy(s[1] ~= s[1], "sqrt(-1) is nan")
  eq(s[2], 2)
  eq(tp.log(tp.tensor{0}):item(), -math.huge)
  eq(tp.exp(tp.tensor{100}):item(), math.huge, "f32 exp overflows to inf")
  eq(tp.reciprocal(tp.tensor{0}):item(), math.huge)
  eq(tp.sign(tp.tensor{-0.5, 0, 3}):totable(), {-1, 0, 1})
end)

test("logical_not", function()
  for _, dt in ipairs(ref.dtypes) do
    local x, r = gen.pair({3, 4}, dt, 11, -2, 2, {whole = true})
    same(tp.logical_not(x), ref.unary("logical_not", r), nil, dt)
  end
end)

test("cast.all_pairs", function()
  for _, from in ipairs(ref.dtypes) do
    for _, to in ipairs(ref.dtypes) do
      local x, r = gen.pair({2, 5}, from, 13, -7.75, 7.75)
      same(x:cast(to), ref.cast(r, to), nil, from .. "->" .. to)
    end
  end
end)

test("cast.truncates", function()
  eq(tp.tensor{-2.7, -0.5, 0.5, 2.7}:cast("i32"):totable(), {-2, 0, 0, 2})
  eq(tp.tensor{-2.7, 0, 0.5}:cast("bool"):totable(), {true, false, true})
  eq(tp.tensor({3, 0}, {dtype = "i64"}):cast("bool"):totable(), {true, false})
  eq(tp.tensor{true, false}:cast("f64"):totable(), {1, 0})
  eq(tp.tensor({16777217}, {dtype = "i64"}):cast("f32"):item(), 16777216)
  local x = tp.tensor{1.5}
  eq(x:cast("f32"):totable(), {1.5}, "cast to its own dtype")
end)

test("costly_map.large_as_pieces", function()
  -- 2^18 + 333 elements: on one rank the fused map runs each tile in short slices with a
  -- prefetch (kernels/cpu/map.cpp, for programs with tanh, exp, ...), while pieces of 2^16 run
  -- as whole tiles; every element takes the same vector path, so the bits agree.
  local n, k = (1 << 18) + 333, 1 << 16
  local a = tp.eval(tp.randn({n}, {seed = 71}))
  local b = tp.eval(tp.randn({n}, {seed = 72}))
  local c = tp.eval(tp.randn({n}, {seed = 73}))
  local function f(x, y, z) return (x * y + z):tanh() * x:exp() end
  local parts = {}
  for first = 1, n, k do
    local len = math.min(k, n - first + 1)
    parts[#parts + 1] = tp.eval(f(a:narrow(1, first, len), b:narrow(1, first, len), c:narrow(1, first, len)))
  end
  check.same_tensor(tp.eval(f(a, b, c)), tp.cat(parts, 1), "whole against pieces")
end)

check.summary()
