-- Reading regions: x[{...}], x[i], narrow, select; writing a region of a named tensor.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, eq, same = check.test, check.eq, check.same

local SPECS = {
  {{}, {}, {}}, {{1, 2}}, {{2}, {}, {2, 3}}, {2}, {-1}, {{}, 3}, {{}, -1, {2}},
  {{1, -1, 2}}, {{2, 4, 2}, {1, 3, 2}}, {1, 2, 3}, {-1, -1, -1}, {{-2, -1}, {-3, -2}},
  {{}, {1, 3, 3}, {4, 4}}, {{3}, {}, {1, 1}},
}

local seed = 700
for _, dt in ipairs(ref.dtypes) do
  seed = seed + 10
  local s = seed
  test("index." .. dt, function()
    local x, r = gen.pair({4, 3, 5}, dt, s)
    for _, spec in ipairs(SPECS) do
      same(x[spec], ref.index(r, spec), nil, check.show(spec))
    end
  end)
  test("number_index." .. dt, function()
    local x, r = gen.pair({4, 3, 5}, dt, s + 1)
    same(x[1], ref.select(r, 1, 1), nil, "x[1]")
    same(x[4], ref.select(r, 1, 4), nil, "x[4]")
    same(x[-1], ref.select(r, 1, 4), nil, "x[-1]")
    same(x[2][3], ref.select(ref.select(r, 1, 2), 1, 3), nil, "x[2][3]")
    same(x[2][3][5], ref.index(r, {2, 3, 5}), nil, "x[2][3][5]")
    eq(x[2][3][5]:item(), ref.index(r, {2, 3, 5}).data[1], "item of an element")
  end)
  test("narrow_select." .. dt, function()
    local x, r = gen.pair({4, 3, 5}, dt, s + 2)
    same(x:narrow(1, 2, 2), ref.narrow(r, 1, 2, 2), nil, "narrow 1")
    same(x:narrow(3, 1, 5), r, nil, "narrow whole")
    same(x:narrow(-1, 3, 3), ref.narrow(r, 3, 3, 3), nil, "narrow -1 to the end")
    same(x:narrow(2, 3, 1), ref.narrow(r, 2, 3, 1), nil, "narrow to size 1")
    same(x:select(2, 3), ref.select(r, 2, 3), nil, "select 2")
    same(x:select(-1, -2), ref.select(r, 3, 4), nil, "select -1, -2")
    same(x:select(1, 1):select(1, 2), ref.select(ref.select(r, 1, 1), 1, 2), nil, "select twice")
  end)
end

test("index.1d", function()
  local x = tp.arange(1, 10)
  eq(x[{{3, 5}}]:totable(), {3, 4, 5})
  eq(x[{{8}}]:totable(), {8, 9, 10})
  eq(x[{{1, -1, 3}}]:totable(), {1, 4, 7, 10})
  eq(x[{{2, 9, 3}}]:totable(), {2, 5, 8})
  eq(x[{-3}]:item(), 8)
  eq(x[{{-3, -2}}]:totable(), {8, 9})
  eq(x[3]:item(), 3)
  eq(x[3].shape, {})
end)

test("index.compose", function()
  local x, r = gen.pair({6, 7}, "f64", 790)
  local y = x[{{2, 6}, {1, 7, 2}}]
  local ry = ref.index(r, {{2, 6}, {1, 7, 2}})
  same(y[{{2, -1, 2}, {2, 3}}], ref.index(ry, {{2, -1, 2}, {2, 3}}), nil, "slice of a slice")
  same(y:t()[2], ref.select(ref.transpose(ry, 1, 2), 1, 2), nil, "index of a transpose")
  same(x[{{}, 2}] + x[{{}, 3}], ref.binary("add", ref.index(r, {{}, 2}), ref.index(r, {{}, 3})),
       nil, "sum of two columns")
  same(x[{{1, 3}}]:sum(2), ref.reduce("sum", ref.index(r, {{1, 3}}), 2), nil, "reduce a slice")
end)

test("env.region_write", function()
  tp.env.w = tp.zeros({3, 4}, {dtype = "i32"})
  tp.env.w[{{1, 2}, {}}] = tp.tensor({1, 2, 3, 4}, {dtype = "i32"})
  eq(tp.env.w:totable(), {{1, 2, 3, 4}, {1, 2, 3, 4}, {0, 0, 0, 0}})
  tp.env.w[{3, {2, 3}}] = 9
  eq(tp.env.w:totable(), {{1, 2, 3, 4}, {1, 2, 3, 4}, {0, 9, 9, 0}})
  eq(tp.env.w.dtype, "i32")
  tp.env.w = nil
  eq(tp.env.w, nil)
end)

test("env.bind_and_read", function()
  local a, ra = gen.pair({2, 3}, "f32", 795)
  tp.env.v = a * 2
  eq(tp.env.v.name, "v")
  same(tp.env.v, ref.binary("mul", ra, 2))
  tp.env.v = tp.env.v + 1  -- rebinding reads the old value
  same(tp.env.v, ref.binary("add", ref.binary("mul", ra, 2), 1))
  tp.env.v = nil
end)

check.summary()
