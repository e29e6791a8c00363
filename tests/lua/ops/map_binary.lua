-- Binary arithmetic: metamethods and tp.maximum/minimum/pow/atan2, every dtype,
-- broadcasting, and Lua numbers on either side.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, eq, same = check.test, check.eq, check.same

local OPS = {
  add = function(a, b) return a + b end,
  sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end,
  div = function(a, b) return a / b end,
  floordiv = function(a, b) return a // b end,
  mod = function(a, b) return a % b end,
  pow = function(a, b) return a ^ b end,
  maximum = function(a, b) return tp.maximum(a, b) end,
  minimum = function(a, b) return tp.minimum(a, b) end,
  atan2 = function(a, b) return tp.atan2(a, b) end,
}
local NAMES = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "maximum", "minimum", "atan2"}
local NO_BOOL = {sub = true, floordiv = true, mod = true, pow = true}

-- Operands (tensor, ref) for op on dtype dt with shape s: divisors avoid 0,
-- powers keep small non-negative integer exponents on ints.
local function operands(name, dt, sa, sb, seed)
  local int = dt == "i32" or dt == "i64"
  local a, ra, b, rb
  if name == "pow" then
    a, ra = gen.pair(sa, dt, seed, int and -4 or 0.5, int and 4 or 3)
    b, rb = gen.pair(sb, dt, seed + 1, int and 0 or -2, int and 3 or 2)
  else
    a, ra = gen.pair(sa, dt, seed)
    local nz = (name == "div" or name == "mod" or name == "floordiv") and dt ~= "bool"
    b, rb = gen.pair(sb, dt, seed + 1, nil, nil, {nonzero = nz})
  end
  return a, ra, b, rb
end

local seed = 100
for _, name in ipairs(NAMES) do
  for _, dt in ipairs(ref.dtypes) do
    if not (dt == "bool" and NO_BOOL[name]) then
      seed = seed + 2
      local s = seed
      test(name .. "." .. dt, function()
        local a, ra, b, rb = operands(name, dt, {3, 5}, {3, 5}, s)
        same(OPS[name](a, b), ref.binary(name, ra, rb))
      end)
      test(name .. "." .. dt .. ".broadcast", function()
        local a, ra, b, rb = operands(name, dt, {4, 1, 3}, {5, 1}, s + 50)
        same(OPS[name](a, b), ref.binary(name, ra, rb), nil, "{4,1,3} op {5,1}")
        if not (name == "pow" and (dt == "i32" or dt == "i64")) then  -- no negative int exponents
          same(OPS[name](b, a), ref.binary(name, rb, ra), nil, "{5,1} op {4,1,3}")
        end
        local c, rc = gen.pair({}, dt, s + 51, 1, 3)
        same(OPS[name](a, c), ref.binary(name, ra, rc), nil, "op a 0-d tensor")
      end)
    end
  end
end

-- Lua numbers: integer and float, on either side.
for _, name in ipairs(NAMES) do
  for _, dt in ipairs{"f32", "f64", "i32", "i64"} do
    seed = seed + 1
    local s = seed
    test(name .. "." .. dt .. ".scalar", function()
      local a, ra = operands(name, dt, {2, 3}, {1}, s)
      local k = name == "pow" and 2 or 3
      same(OPS[name](a, k), ref.binary(name, ra, k), nil, "x op " .. k)
      same(OPS[name](a, 2.5), ref.binary(name, ra, 2.5), nil, "x op 2.5")
      if name ~= "pow" then
        local p, rp = gen.pair({2, 3}, dt, s, 1, 5)  -- positive: a valid divisor
        same(OPS[name](k, p), ref.binary(name, k, rp), nil, k .. " op x")
        same(OPS[name](-1.5, p), ref.binary(name, -1.5, rp), nil, "-1.5 op x")
      end
    end)
  end
end

test("bool.add_mul", function()
  local a = tp.tensor{true, true, false, false}
  local b = tp.tensor{true, false, true, false}
  eq((a + b).dtype, "bool")
  eq((a + b):totable(), {true, true, true, false})
  eq((a * b):totable(), {true, false, false, false})
  eq((a / b).dtype, "f32")
end)

test("int.floordiv_mod_signs", function()
  for _, dt in ipairs{"i32", "i64"} do
    local a = tp.tensor({7, -7, 7, -7, 0}, {dtype = dt})
    local b = tp.tensor({2, 2, -2, -2, 3}, {dtype = dt})
    eq((a // b):totable(), {3, -4, -4, 3, 0}, dt)
    eq((a % b):totable(), {1, 1, -1, -1, 0}, dt)
    eq((a // 0):totable(), {0, 0, 0, 0, 0}, dt .. " // 0")
  end
end)

test("float.floordiv_mod_signs", function()
  for _, dt in ipairs{"f32", "f64"} do
    local a = tp.tensor({7.5, -7.5, 7.5, -7.5}, {dtype = dt})
    local b = tp.tensor({2, 2, -2, -2}, {dtype = dt})
    eq((a // b):totable(), {3, -4, -4, 3}, dt)
    eq((a % b):totable(), {1.5, 0.5, -0.5, -1.5}, dt)
  end
end)

test("int.pow", function()
  local a = tp.tensor({2, -3, 5}, {dtype = "i64"})
  eq((a ^ 3):totable(), {8, -27, 125})
  eq((a ^ 3).dtype, "i64")
  local p39 = 1
  for _ = 1, 39 do p39 = p39 * 3 end
  eq((tp.tensor({3}, {dtype = "i64"}) ^ 39):item(), p39, "exact beyond 2^53")
end)

test("nan.propagates", function()
  local nan = 0 / 0
  local m = tp.maximum(tp.tensor{1, nan, 3}, tp.tensor{2, 2, nan}):totable()
  eq(m[1], 2)
  check.truthy(m[2] ~= m[2] and m[3] ~= m[3], "maximum with nan is nan")
  local n = tp.minimum(tp.tensor{nan}, 1):item()
  check.truthy(n ~= n, "minimum with nan is nan")
end)

test("clamp", function()
  for _, dt in ipairs{"f32", "f64", "i32", "i64"} do
    local x, r = gen.pair({4, 5}, dt, 77)
    same(x:clamp(-2, 3), ref.clamp(r, -2, 3), nil, dt)
    same(x:clamp(-2.5, 3.5), ref.clamp(r, -2.5, 3.5), nil, dt .. " float bounds")
  end
  local x, r = gen.pair({6}, "f32", 78)
  local lo, rlo = gen.pair({6}, "f32", 79, -3, 0)
  same(x:clamp(lo, 1), ref.clamp(r, rlo, 1), nil, "tensor bound")
end)

test("chain", function()
  local a, ra = gen.pair({3, 4}, "f64", 81)
  local b, rb = gen.pair({4}, "f64", 82)
  local want = ref.binary("div", ref.binary("mul", ref.binary("add", ra, rb), ra), 2)
  same((a + b) * a / 2, want)
end)

test("medium.broadcast", function()
  -- past one map tile (2048 elements) and the serial threshold, uneven sizes
  local a, ra = gen.pair({5, 4099}, "f32", 95)
  local b, rb = gen.pair({4099}, "f32", 96)
  same(a * b + a, ref.binary("add", ref.binary("mul", ra, rb), ra), nil, "f32 {5,4099} {4099}")
  local c, rc = gen.pair({300, 1}, "f64", 97)
  local d, rd = gen.pair({301}, "f64", 98)
  same(tp.maximum(c, d) - d, ref.binary("sub", ref.binary("maximum", rc, rd), rd), nil, "f64 {300,1} {301}")
  local i, ri = gen.pair({3, 40000}, "i32", 99)
  same(i // 4 + i % 7, ref.binary("add", ref.binary("floordiv", ri, 4), ref.binary("mod", ri, 7)),
       nil, "i32 {3,40000}")
end)

check.summary()
