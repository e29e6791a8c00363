-- A reduction of an elementwise expression over its trailing dims (row sums of squares, RMS
-- means, row maxima) on tensors large enough that the engine folds each row from the
-- expression's tiles instead of materializing it: the same values, bit for bit, as the same
-- reduction of the materialized expression; rows of 1 to 3000 elements, keepdim, several
-- trailing dims, too few rows for that path, and a NaN.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, near, same_tensor = check.test, check.eq, check.near, check.same_tensor

local SHAPES = {{300000, 1}, {40000, 7}, {20000, 31}, {10000, 33}, {3000, 100}, {600, 1000}, {150, 3000}}

for i, shape in ipairs(SHAPES) do
  test("rows of " .. shape[2], function()
    local x = tp.eval(tp.randn(shape, {seed = 40 + i}))
    local y = tp.eval(tp.randn(shape, {seed = 80 + i}))
    -- The same expressions materialized from copies of x and y: other nodes (an expression on
    -- x and y themselves would be the very node, its value already computed).
    local xc, yc = tp.eval(x + 0), tp.eval(y + 0)
    local m = tp.eval(xc * yc + 0.5)
    same_tensor((x * y + 0.5):sum(2), m:sum(2), "sum")
    same_tensor((x * y + 0.5):max(-1), m:max(-1), "max")
    same_tensor((x * y + 0.5):min(2, {keepdim = true}), m:min(2, {keepdim = true}), "min keepdim")
    same_tensor((x * x):mean(2), tp.eval(xc * xc):mean(2), "mean of squares")
    same_tensor((x:gt(y)):any(2), tp.eval(xc:gt(yc)):any(2), "any")
    same_tensor((x:gt(-3)):all(2), tp.eval(xc:gt(-3)):all(2), "all")
  end)
end

test("two trailing dims, f64", function()
  local x = tp.eval(tp.randn({50, 40, 200}, {seed = 7, dtype = "f64"}))
  local xc = tp.eval(x + 0)
  same_tensor((x * 3 - 1):sum({2, 3}), tp.eval(xc * 3 - 1):sum({2, 3}), "sum over two dims")
  same_tensor((x * 3 - 1):prod(3), tp.eval(xc * 3 - 1):prod(3), "prod")
end)

test("a row sum against Lua's own", function()
  local x = tp.randn({2000, 257}, {seed = 9, dtype = "f64"})
  local s = (x * x):sum(2)
  local rows = x:totable()
  for _, r in ipairs({1, 777, 2000}) do
    local want = 0
    for _, v in ipairs(rows[r]) do want = want + v * v end
    near(s[r]:item(), want, 1e-12, "row " .. r)
  end
end)

test("few rows: each row cut, near the materialized one", function()
  local x = tp.randn({8, 100000}, {seed = 11})
  near((x * x):sum(2):totable(), tp.eval(x * x):sum(2):totable(), 1e-5, "8 long rows")
end)

test("a NaN is its row's max and no other's", function()
  local x = tp.randn({5000, 64}, {seed = 13})
  local z = tp.where(tp.arange(1, 5000 * 64):reshape({5000, 64}):eq(64 * 99 + 5), 0 / 0, x)
  local mx = (z * 2):max(2)
  eq(mx[100]:item() ~= mx[100]:item(), true, "row 100 is NaN")
  eq(mx:ne(mx):sum():item(), 1, "one NaN row (NaN ~= NaN)")
end)

check.summary()
