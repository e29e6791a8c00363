-- Corners where an independent comparison with numpy disagreed (issue 24, "Also fix"); the
-- expected values are numpy's for the same inputs (Lua integers stand for Python ints).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local MAX, MIN = math.maxinteger, math.mininteger

test("tensor.i64_extremes", function()
  -- np.array([2**63-1, -2**63], dtype=np.int64)
  eq(tp.tensor({MAX, MIN}, {dtype = "i64"}):totable(), {MAX, MIN})
  eq(tp.tensor({{MAX}, {MAX - 1}}, {dtype = "i64"}):sum():item(), -3, "sums wrap as numpy's int64")
  check.check_error(function() return tp.tensor({2147483648}, {dtype = "i32"}) end, "tp.tensor",
                    "2147483648", "out of range")
  check.check_error(function() return tp.tensor({2^63}, {dtype = "i64"}) end, "out of range")
end)

test("arange.i64_exact", function()
  local big = (1 << 53) + 1  -- not a double: a float range would start at 2^53
  eq(tp.arange(big, big + 2, 1, {dtype = "i64"}):totable(), {big, big + 1, big + 2})
  eq(tp.arange(MAX - 2, MAX, 1, {dtype = "i64"}):totable(), {MAX - 2, MAX - 1, MAX})
  eq(tp.arange(MIN, MIN + 4, 2, {dtype = "i64"}):totable(), {MIN, MIN + 2, MIN + 4})
  eq(tp.arange(MAX, MAX - 4, -2, {dtype = "i64"}):totable(), {MAX, MAX - 2, MAX - 4})
  eq(tp.arange(MIN, MAX, MAX, {dtype = "i64"}):totable(), {MIN, -1, MAX - 1})
  eq(tp.arange(1, -5.5, -2, {dtype = "i32"}):totable(), {1, -1, -3, -5}, "float last, integer step")
  eq(tp.arange(3, 5):totable(), {3, 4, 5}, "integers without a dtype stay f32")
  check.check_error(function() return tp.arange(MIN, MAX, 1, {dtype = "i64"}) end, "tp.arange", "too large")
  check.check_error(function() return tp.arange(2147483647, 2147483648, 1, {dtype = "i32"}) end,
                    "tp.arange", "does not fit in i32")
end)

test("pad.values_cast_as_numpy", function()
  local big = (1 << 53) + 1
  local x = tp.tensor({1, 2}, {dtype = "i64"})
  eq(x:pad({1, 1}, {value = big}):totable(), {big, 1, 2, big})
  eq(x:pad({1, 0}, {value = MAX}):totable(), {MAX, 1, 2})
  -- np.pad(np.int32([1,2]), 1, constant_values=2.5) -> [2 1 2 2]
  eq(tp.tensor({1, 2}, {dtype = "i32"}):pad({1, 1}, {value = 2.5}):totable(), {2, 1, 2, 2})
  eq(tp.tensor({1, 2}, {dtype = "i32"}):pad({1, 0}, {value = -2.5}):totable(), {-2, 1, 2})
  eq(tp.tensor{false}:pad({1, 1}, {value = 2}):totable(), {true, false, true})
  eq(tp.tensor{false}:pad({1, 0}, {value = 0.5}):totable(), {true, false})
  eq(tp.tensor{true}:pad({0, 1}, {value = false}):totable(), {true, false})
  eq(tp.tensor{1.5}:pad({0, 1}, {value = true}):totable(), {1.5, 1})
  check.check_error(function() return x:pad({1, 1}, {value = 0 / 0}) end, "tp.pad", "out of range")
  check.check_error(function() return x:pad({1, 1}, {value = "a"}) end, "tp.pad", "number or boolean")
end)

test("write_region.bool_from_fraction", function()
  tp.env.corner_w = tp.zeros({3}, {dtype = "bool"})
  tp.env.corner_w[{{1, 2}}] = 0.5
  eq(tp.env.corner_w:totable(), {true, true, false}, "0.5 is true, as cast and tp.full")
  tp.env.corner_w[{3}] = -0.25
  eq(tp.env.corner_w:totable(), {true, true, true})
  tp.env.corner_w[{{2, 3}}] = 0.0
  eq(tp.env.corner_w:totable(), {true, false, false})
  tp.env.corner_w = nil
end)

test("logical.fractional_number", function()
  local x = tp.tensor{true, false}
  eq(x:logical_and(0.5):totable(), {true, false})
  eq(x:logical_or(0.5):totable(), {true, true})
  eq(tp.logical_or(tp.tensor{false}, 0.0):totable(), {false})
  eq(tp.logical_and(0.5, x):totable(), {true, false})
  eq(tp.where(0.5, tp.tensor{1}, tp.tensor{2}):totable(), {1}, "a fractional condition is true")
end)

test("sum_prod.dtype_of_0d", function()
  -- np.sum(np.int32(3), keepdims=True).dtype is int64, as is the sum of a bool
  for _, dt in ipairs{"i32", "i64", "bool"} do
    for _, keepdim in ipairs{false, true} do
      local x = tp.tensor(dt == "bool" and true or 3, {dtype = dt})
      local s, p = x:sum(nil, {keepdim = keepdim}), x:prod(nil, {keepdim = keepdim})
      eq({s.dtype, p.dtype}, {"i64", "i64"}, dt .. (keepdim and " keepdim" or ""))
      eq({s:item(), p:item()}, dt == "bool" and {1, 1} or {3, 3})
    end
  end
  eq(tp.tensor(2.5):sum(nil, {keepdim = true}).dtype, "f32")
end)

check.summary()
