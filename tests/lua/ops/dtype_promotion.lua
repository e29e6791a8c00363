-- Result dtypes (numpy 2, NEP 50): tensor with tensor, tensor with Lua number,
-- division, float math, reductions; values of mixed ops against the reference.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, eq, same = check.test, check.eq, check.same

local D = ref.dtypes

-- numpy's promotion table for the five dtypes, written out (not computed).
local TABLE = {
  f32  = {f32 = "f32", f64 = "f64", i32 = "f64", i64 = "f64", bool = "f32"},
  f64  = {f32 = "f64", f64 = "f64", i32 = "f64", i64 = "f64", bool = "f64"},
  i32  = {f32 = "f64", f64 = "f64", i32 = "i32", i64 = "i64", bool = "i32"},
  i64  = {f32 = "f64", f64 = "f64", i32 = "i64", i64 = "i64", bool = "i64"},
  bool = {f32 = "f32", f64 = "f64", i32 = "i32", i64 = "i64", bool = "bool"},
}

test("table.add", function()
  for _, a in ipairs(D) do
    for _, b in ipairs(D) do
      eq((tp.ones({2}, {dtype = a}) + tp.ones({2}, {dtype = b})).dtype, TABLE[a][b], a .. "+" .. b)
      eq(ref.promote(a, b), TABLE[a][b], "ref " .. a .. "+" .. b)
    end
  end
end)

test("table.values", function()
  local seed = 800
  for _, a in ipairs(D) do
    for _, b in ipairs(D) do
      seed = seed + 2
      local x, rx = gen.pair({2, 3}, a, seed, -4, 4)
      local y, ry = gen.pair({3}, b, seed + 1, -4, 4)
      local what = a .. " op " .. b
      same(x * y, ref.binary("mul", rx, ry), nil, what .. " *")
      same(tp.maximum(x, y), ref.binary("maximum", rx, ry), nil, what .. " maximum")
      if TABLE[a][b] ~= "bool" then same(x - y, ref.binary("sub", rx, ry), nil, what .. " -") end
    end
  end
end)

-- A Lua number is weak: it never widens a float tensor, and an integer keeps an int tensor.
local WEAK = {
  {"f32", 2, "f32"}, {"f32", 2.5, "f32"}, {"f32", true, "f32"},
  {"f64", 2, "f64"}, {"f64", 2.5, "f64"},
  {"i32", 2, "i32"}, {"i32", 2.5, "f64"}, {"i32", true, "i32"},
  {"i64", 2, "i64"}, {"i64", 2.5, "f64"},
  {"bool", 2, "i64"}, {"bool", 2.5, "f64"}, {"bool", true, "bool"},
}

test("weak.scalars", function()
  for _, w in ipairs(WEAK) do
    local x = tp.ones({2}, {dtype = w[1]})
    local what = w[1] .. " + " .. tostring(w[2])
    eq((x + w[2]).dtype, w[3], what)
    eq((w[2] + x).dtype, w[3], "reversed " .. what)
    eq(ref.common(ref.full({2}, 1, w[1]), w[2]), w[3], "ref " .. what)
    if w[1] ~= "bool" or w[2] ~= true then
      same(x * w[2], ref.binary("mul", ref.full({2}, 1, w[1]), w[2]), nil, what)
    end
  end
end)

test("weak.i32_no_overflow_to_f64", function()
  local x = tp.tensor({100000}, {dtype = "i32"})
  eq((x * 3).dtype, "i32")
  eq((x * 3):item(), 300000)
  eq(math.type((x * 3):item()), "integer")
  local y = tp.tensor({0.1}, {dtype = "f32"}) * 3
  eq(y:item(), ref.round_f32(ref.round_f32(0.1) * 3), "f32 * 3 is computed in f32")
end)

test("division", function()
  for _, dt in ipairs(D) do
    local want = ({bool = "f32", i32 = "f64", i64 = "f64", f32 = "f32", f64 = "f64"})[dt]
    local x = tp.ones({2}, {dtype = dt})
    eq((x / x).dtype, want, dt .. " / " .. dt)
    eq((x / 2).dtype, dt == "bool" and "f64" or want, dt .. " / 2 (bool with a Lua integer is i64)")
  end
  eq((tp.tensor({7}, {dtype = "i32"}) / 2):item(), 3.5)
  eq((tp.tensor({7}, {dtype = "i64"}) // 2).dtype, "i64")
  eq((tp.tensor({7.5}, {dtype = "f64"}) // 2).dtype, "f64")
  eq((tp.tensor({7}, {dtype = "i32"}) % 2.5).dtype, "f64")
end)

test("float_math", function()
  for _, name in ipairs{"exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "gelu", "reciprocal"} do
    for _, dt in ipairs(D) do
      local want = ({bool = "f32", i32 = "f64", i64 = "f64", f32 = "f32", f64 = "f64"})[dt]
      eq(tp[name](tp.ones({2}, {dtype = dt})).dtype, want, name .. " " .. dt)
    end
  end
  for _, name in ipairs{"floor", "ceil", "round", "abs", "square", "sign", "neg", "relu"} do
    for _, dt in ipairs{"i32", "i64", "f32", "f64"} do
      eq(tp[name](tp.ones({2}, {dtype = dt})).dtype, dt, name .. " " .. dt)
    end
  end
  eq(tp.floor(tp.tensor({-3, 4}, {dtype = "i32"})):totable(), {-3, 4}, "floor of ints is the identity")
  eq(tp.atan2(tp.ones({2}, {dtype = "i32"}), 1).dtype, "f64")
end)

test("reductions", function()
  local want = {
    sum = {bool = "i64", i32 = "i64", i64 = "i64", f32 = "f32", f64 = "f64"},
    prod = {bool = "i64", i32 = "i64", i64 = "i64", f32 = "f32", f64 = "f64"},
    mean = {bool = "f32", i32 = "f64", i64 = "f64", f32 = "f32", f64 = "f64"},
    var = {bool = "f32", i32 = "f64", i64 = "f64", f32 = "f32", f64 = "f64"},
    max = {bool = "bool", i32 = "i32", i64 = "i64", f32 = "f32", f64 = "f64"},
    all = {bool = "bool", i32 = "bool", i64 = "bool", f32 = "bool", f64 = "bool"},
    any = {bool = "bool", i32 = "bool", i64 = "bool", f32 = "bool", f64 = "bool"},
    argmax = {bool = "i64", i32 = "i64", i64 = "i64", f32 = "i64", f64 = "i64"},
  }
  for name, by in pairs(want) do
    for dt, out in pairs(by) do
      local x = tp.ones({2, 3}, {dtype = dt})
      eq(x[name](x).dtype, out, name .. " " .. dt)
      eq(x[name](x, 1).dtype, out, name .. " " .. dt .. " dim 1")
      eq(ref.reduce_dtype(name, dt), out, "ref " .. name .. " " .. dt)
    end
  end
  eq(tp.tensor({true, true, false}):sum():item(), 2)
  eq(math.type(tp.tensor({1, 2}, {dtype = "i32"}):sum():item()), "integer")
  eq(tp.tensor({1, 2}, {dtype = "i32"}):mean():item(), 1.5)
end)

test("comparisons_are_bool", function()
  for _, a in ipairs(D) do
    for _, b in ipairs(D) do
      local x, y = tp.ones({2}, {dtype = a}), tp.zeros({2}, {dtype = b})
      eq(x:gt(y).dtype, "bool", a .. " > " .. b)
      eq(x:gt(y):totable(), {true, true}, a .. " > " .. b)
    end
  end
end)

test("i64_precision", function()
  local big = (1 << 62) + 3
  local x = tp.tensor({big}, {dtype = "i64"})
  eq((x + 1):item(), big + 1)
  eq((x - big):item(), 0)
  eq((x // 2):item(), big // 2)
  eq(x:max():item(), big)
  eq(tp.tensor({big, 1}, {dtype = "i64"}):sum():item(), big + 1)
end)

test("cast_then_op", function()
  local x, r = gen.pair({5}, "f32", 880, -3, 3)
  same(x:cast("i32") + 1, ref.binary("add", ref.cast(r, "i32"), 1))
  same(x:cast("i64") * x, ref.binary("mul", ref.cast(r, "i64"), r))
end)

check.summary()
