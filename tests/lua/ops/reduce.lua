-- Reductions over dims (nil, a number, a list; negative; keepdim), every dtype.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, eq, near, same = check.test, check.eq, check.near, check.same

local NAMES = {"sum", "mean", "max", "min", "prod", "var", "std", "norm", "all", "any"}
local DIMS = {{nil}, {1}, {2}, {3}, {-1}, {-3}, {{1, 3}}, {{3, 1}}, {{-1, 2}}, {{1, 2, 3}}}

local function dims_text(d)
  if d == nil then return "nil" end
  return check.show(d)
end

local seed = 300
for _, name in ipairs(NAMES) do
  for _, dt in ipairs(ref.dtypes) do
    seed = seed + 1
    local s = seed
    test(name .. "." .. dt, function()
      local lo, hi = -3, 3
      if name == "prod" then lo, hi = (dt == "f32" or dt == "f64") and 0.5 or -2, 2 end
      local x, r = gen.pair({3, 5, 2}, dt, s, lo, hi, {whole = name == "all" or name == "any"})
      for _, d in ipairs(DIMS) do
        for _, keepdim in ipairs{false, true} do
          local what = "dims " .. dims_text(d[1]) .. (keepdim and " keepdim" or "")
          local opts = {keepdim = keepdim}
          -- x:norm(p, dims): p comes first, as in torch
          local got = name == "norm" and x:norm(2, d[1], opts) or x[name](x, d[1], opts)
          same(got, ref.reduce(name, r, d[1], opts), nil, what)
        end
      end
      same(x[name](x), ref.reduce(name, r), nil, "no arguments")
    end)
  end
end

test("norm.p_first", function()
  local x = tp.tensor{{3, -4}, {1, 2}}
  near(x:norm():item(), math.sqrt(30), 1e-6)
  near(x:norm(2):item(), math.sqrt(30), 1e-6, "2 is p, not a dim")
  eq(x:norm(1, 2):totable(), {7, 3}, "the 1-norm of each row")
  eq(x:norm(math.huge, 1):totable(), {3, 4}, "the max norm of each column")
  eq(x:norm("inf"):item(), 4)
  near(x:norm("fro"):item(), math.sqrt(30), 1e-6)
  eq(x:norm(1, 2, {keepdim = true}).shape, {2, 1})
  eq(x:norm({keepdim = true}).shape, {1, 1})
  near(tp.norm(x, 1):item(), 10, 1e-6)
  check.check_error(function() return x:norm(0) end, "tp.norm", "p must be positive")
  check.check_error(function() return x:norm("nuc") end, "p must be a positive number")
end)

test("var_std.correction", function()
  for _, dt in ipairs{"f32", "f64", "i32"} do
    local x, r = gen.pair({4, 7}, dt, 351)
    for _, c in ipairs{0, 1, 2, 0.5} do
      for _, name in ipairs{"var", "std"} do
        local opts = {correction = c}
        same(x[name](x, 2, opts), ref.reduce(name, r, 2, opts), nil, name .. " correction " .. c)
        same(x[name](x, nil, opts), ref.reduce(name, r, nil, opts), nil, name .. " all, correction " .. c)
      end
    end
    local k = {correction = 1, keepdim = true}
    same(x:var(-1, k), ref.reduce("var", r, -1, k), nil, "correction and keepdim")
  end
end)

test("arg.reductions", function()
  for _, dt in ipairs(ref.dtypes) do
    -- whole values in a small range: ties, and the first one must win
    local x, r = gen.pair({4, 3, 5}, dt, 361, -2, 2, {whole = true})
    for _, name in ipairs{"argmax", "argmin"} do
      same(x[name](x), ref.reduce(name, r), nil, name .. " flat")
      for _, d in ipairs{1, 2, 3, -1} do
        same(x[name](x, d), ref.reduce(name, r, d), nil, name .. " dim " .. d)
        local k = {keepdim = true}
        same(x[name](x, d, k), ref.reduce(name, r, d, k), nil, name .. " dim " .. d .. " keepdim")
      end
      same(x[name](x, nil, {keepdim = true}), ref.reduce(name, r, nil, {keepdim = true}), nil,
           name .. " flat keepdim")
    end
  end
end)

test("argmax.one_based", function()
  local x = tp.tensor{{1, 9, 3}, {7, 2, 8}}
  eq(x:argmax():item(), 2)
  eq(x:argmax(2):totable(), {2, 3})
  eq(x:argmin(1):totable(), {1, 2, 1})
  eq(x:argmax().dtype, "i64")
end)

test("reduce.1d_and_scalar", function()
  local x, r = gen.pair({13}, "f64", 371)
  same(x:sum(), ref.reduce("sum", r))
  same(x:sum(1), ref.reduce("sum", r, 1))
  same(x:max(-1, {keepdim = true}), ref.reduce("max", r, -1, {keepdim = true}))
  eq(tp.tensor(3.5):sum():item(), 3.5)
end)

test("reduce.odd_sizes", function()
  for _, shape in ipairs{{7, 11}, {1, 13}, {17, 1}, {2, 3, 5, 7}} do
    local x, r = gen.pair(shape, "f32", 380 + #shape)
    same(x:sum(1), ref.reduce("sum", r, 1), nil, check.show(shape))
    same(x:max(-1), ref.reduce("max", r, -1), nil, check.show(shape))
    same(x:mean(), ref.reduce("mean", r), nil, check.show(shape))
  end
end)

test("reduce.large", function()
  -- long f32 sums stay accurate (pairwise or wider accumulation)
  local x = tp.ones{1000, 1000}
  eq(x:sum():item(), 1e6)
  near((x * 0.1):sum():item(), 1e5, 1e-4)
  eq(tp.ones({100000}, {dtype = "i32"}):sum():item(), 100000)
end)

test("reduce.of_expression", function()
  local a, ra = gen.pair({6, 4}, "f32", 390)
  local b, rb = gen.pair({4}, "f32", 391)
  same((a * b):sum(2), ref.reduce("sum", ref.binary("mul", ra, rb), 2))
  same((a + 1):max(1):sum(), ref.reduce("sum", ref.reduce("max", ref.binary("add", ra, 1), 1)))
end)

test("reduce.nan", function()
  local x = tp.tensor{1, 0 / 0, 3}
  local m = x:max():item()
  check.truthy(m ~= m, "max propagates nan")
  local s = x:sum():item()
  check.truthy(s ~= s, "sum propagates nan")
end)

test("reduce.medium", function()
  -- large enough for the kernels' parallel paths (more than 2^15 inputs)
  local x = tp.rand({130, 701}, {seed = 395}) - 0.5
  local r = ref.of(x)
  for _, d in ipairs{{nil}, {1}, {2}} do
    for _, name in ipairs{"sum", "max", "mean", "argmax", "argmin"} do
      same(x[name](x, d[1]), ref.reduce(name, r, d[1]), 1e-4, name .. " dims " .. tostring(d[1]))
    end
  end
  local y = tp.rand({300001}, {seed = 396})
  local vs, best, bi = y:totable(), -1, 0
  for i, v in ipairs(vs) do if v > best then best, bi = v, i end end
  eq(y:argmax():item(), bi, "flat argmax over several chunks")
  eq(y:max():item(), best)
end)

check.summary()
