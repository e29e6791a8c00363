-- Comparisons (bool results), logical ops and tp.where, every dtype.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, eq, same = check.test, check.eq, check.same

local CMP = {"eq", "ne", "lt", "le", "gt", "ge"}
local WHOLE = {whole = true}  -- small whole values, so that ties occur

local seed = 200
for _, name in ipairs(CMP) do
  for _, dt in ipairs(ref.dtypes) do
    seed = seed + 3
    local s = seed
    test(name .. "." .. dt, function()
      local a, ra = gen.pair({3, 4}, dt, s, -2, 2, WHOLE)
      local b, rb = gen.pair({3, 4}, dt, s + 1, -2, 2, WHOLE)
      same(a[name](a, b), ref.binary(name, ra, rb), nil, "same shape")
      local c, rc = gen.pair({4}, dt, s + 2, -2, 2, WHOLE)
      same(a[name](a, c), ref.binary(name, ra, rc), nil, "broadcast {3,4} {4}")
      local d, rd = gen.pair({3, 1}, dt, s + 2, -2, 2, WHOLE)
      same(c[name](c, d), ref.binary(name, rc, rd), nil, "broadcast {4} {3,1}")
      if dt ~= "bool" then
        same(a[name](a, 1), ref.binary(name, ra, 1), nil, "with 1")
        same(a[name](a, 0.5), ref.binary(name, ra, 0.5), nil, "with 0.5")
      else
        same(a[name](a, true), ref.binary(name, ra, true), nil, "with true")
      end
    end)
  end
end

test("compare.f32_vs_lua_float", function()
  -- the Lua number is weak: 0.1 is compared as an f32, so it equals the element
  local x = tp.tensor{0.1, 0.2}
  eq(x:eq(0.1):totable(), {true, false})
  eq(tp.tensor({0.1}, {dtype = "f64"}):eq(0.1):item(), true)
end)

test("compare.mixed_dtypes", function()
  local i, ri = gen.pair({5}, "i32", 230, -2, 2)
  local f, rf = gen.pair({5}, "f32", 231, -2, 2, WHOLE)
  same(i:lt(f), ref.binary("lt", ri, rf))
  same(f:ge(i), ref.binary("ge", rf, ri))
  local big = tp.tensor({16777217}, {dtype = "i64"})
  eq(big:eq(tp.tensor{16777216}):item(), false, "i64 vs f32 compares in f64")
end)

test("compare.nan", function()
  local x = tp.tensor{0 / 0, 1}
  eq(x:eq(x):totable(), {false, true})
  eq(x:ne(x):totable(), {true, false})
  eq(x:lt(2):totable(), {false, true})
end)

for _, name in ipairs{"logical_and", "logical_or"} do
  for _, dt in ipairs(ref.dtypes) do
    seed = seed + 2
    local s = seed
    test(name .. "." .. dt, function()
      local a, ra = gen.pair({2, 3, 4}, dt, s, -1, 1, WHOLE)
      local b, rb = gen.pair({3, 1}, dt, s + 1, -1, 1, WHOLE)
      same(tp[name](a, b), ref.binary(name, ra, rb))
      same(tp[name](a, true), ref.binary(name, ra, true), nil, "with true")
      same(tp[name](a, false), ref.binary(name, ra, false), nil, "with false")
    end)
  end
end

test("logical.mixed", function()
  local a, ra = gen.pair({6}, "f64", 260, -1, 1, WHOLE)
  local b, rb = gen.pair({6}, "bool", 261)
  same(tp.logical_and(a, b), ref.binary("logical_and", ra, rb))
  same(tp.logical_not(tp.logical_or(a, b)), ref.unary("logical_not", ref.binary("logical_or", ra, rb)))
end)

for _, dt in ipairs(ref.dtypes) do
  seed = seed + 3
  local s = seed
  test("where." .. dt, function()
    local c, rc = gen.pair({3, 4}, "bool", s)
    local a, ra = gen.pair({3, 4}, dt, s + 1)
    local b, rb = gen.pair({4}, dt, s + 2)
    same(tp.where(c, a, b), ref.where(rc, ra, rb), nil, "broadcast b")
    local c1, rc1 = gen.pair({3, 1}, "bool", s + 3)
    same(tp.where(c1, a, b), ref.where(rc1, ra, rb), nil, "broadcast cond")
    if dt ~= "bool" then
      same(tp.where(c, a, 0), ref.where(rc, ra, 0), nil, "scalar b")
      same(tp.where(c, 2, a), ref.where(rc, 2, ra), nil, "scalar a")
    end
    local n, rn = gen.pair({3, 4}, dt, s + 4, -1, 1, WHOLE)
    same(tp.where(n, a, b), ref.where(rn, ra, rb), nil, "non-bool condition")
  end)
end

test("where.promotes", function()
  local c = tp.tensor{true, false}
  local i = tp.tensor({1, 2}, {dtype = "i32"})
  local f = tp.tensor{0.5, 1.5}
  eq(tp.where(c, i, f).dtype, "f64")
  eq(tp.where(c, i, f):totable(), {1, 1.5})
  eq(tp.where(c, f, 7).dtype, "f32")
  eq(tp.where(c, 1, 2.5):totable(), {1, 2.5})
  eq(tp.where(c:gt(0), i, i * 10):totable(), {1, 20})
end)

check.summary()
