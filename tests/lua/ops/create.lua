-- Creators: tp.tensor, zeros/ones/full/eye, arange, linspace, rand/randn; metadata.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local test, eq, near, same = check.test, check.eq, check.near, check.same

test("tensor.default_f32", function()
  local x = tp.tensor{{1, 2, 3}, {4, 5, 6}}
  eq(x.dtype, "f32")
  eq(x.shape, {2, 3})
  eq(x:totable(), {{1, 2, 3}, {4, 5, 6}})
  eq(math.type(x:totable()[1][1]), "float")
end)

test("tensor.f32_rounds", function()
  local x = tp.tensor{0.1, 1 / 3}
  eq(x:totable(), {ref.round_f32(0.1), ref.round_f32(1 / 3)})
  eq(tp.tensor({0.1}, {dtype = "f64"}):totable(), {0.1})
end)

test("tensor.bool", function()
  local x = tp.tensor{true, false, true}
  eq(x.dtype, "bool")
  eq(x:totable(), {true, false, true})
  eq(tp.tensor(false):item(), false)
end)

test("tensor.dtypes", function()
  for _, dt in ipairs(ref.dtypes) do
    local t = {{1, 0, -2}, {3, 4, 0}}
    local x = tp.tensor(t, {dtype = dt})
    same(x, ref.tensor(t, dt), 0, dt)
    if dt == "i32" or dt == "i64" then eq(math.type(x:totable()[1][1]), "integer", dt) end
  end
end)

test("tensor.i64_exact", function()
  local big = (1 << 53) + 1
  local x = tp.tensor({big, -big}, {dtype = "i64"})
  eq(x:totable(), {big, -big})
  eq(x[1]:item(), big)
end)

test("tensor.scalar", function()
  local x = tp.tensor(2.5)
  eq(x.shape, {})
  eq(x:dim(), 0)
  eq(x:numel(), 1)
  eq(x:item(), 2.5)
  eq(tp.tensor(7, {dtype = "i64"}):item(), 7)
  eq(math.type(tp.tensor(7, {dtype = "i32"}):item()), "integer")
end)

test("tensor.3d", function()
  local t = {{{1, 2}, {3, 4}, {5, 6}}, {{7, 8}, {9, 10}, {11, 12}}}
  same(tp.tensor(t, {dtype = "i32"}), ref.tensor(t, "i32"))
end)

test("metadata", function()
  local x = tp.zeros{2, 3, 5}
  eq(x:dim(), 3)
  eq(x:size(1), 2)
  eq(x:size(3), 5)
  eq(x:size(-1), 5)
  eq(x:size(-3), 2)
  eq(x:numel(), 30)
  eq(#x, 2)
  eq(x.name, nil)
  local s = x.shape
  s[1] = 99
  eq(x.shape, {2, 3, 5}, "shape is a fresh table")
end)

test("zeros_ones_full", function()
  for _, dt in ipairs(ref.dtypes) do
    same(tp.zeros({2, 3}, {dtype = dt}), ref.full({2, 3}, 0, dt), 0, dt)
    same(tp.ones({4}, {dtype = dt}), ref.full({4}, 1, dt), 0, dt)
  end
  same(tp.zeros{3}, ref.full({3}, 0, "f32"))
  same(tp.full({2, 2}, 7), ref.full({2, 2}, 7, "f32"))
  same(tp.full({2, 2}, 0.1), ref.full({2, 2}, 0.1, "f32"))
  same(tp.full({3}, -4, {dtype = "i32"}), ref.full({3}, -4, "i32"))
  same(tp.full({3}, 2.5, {dtype = "f64"}), ref.full({3}, 2.5, "f64"))
  same(tp.full({2}, true, {dtype = "bool"}), ref.full({2}, true, "bool"))
  eq(tp.full({}, 3):item(), 3)
end)

test("eye", function()
  eq(tp.eye(3):totable(), {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}})
  eq(tp.eye(3).dtype, "f32")
  for _, dt in ipairs(ref.dtypes) do
    local want = ref.new(dt, {2, 2}, {ref.convert(1, dt), ref.convert(0, dt), ref.convert(0, dt), ref.convert(1, dt)})
    same(tp.eye(2, {dtype = dt}), want, 0, dt)
  end
end)

test("arange", function()
  same(tp.arange(1, 5), ref.arange(1, 5, 1, "f32"))
  same(tp.arange(1, 10, 3), ref.arange(1, 10, 3, "f32"))
  same(tp.arange(5, 1, -1), ref.arange(5, 1, -1, "f32"))
  same(tp.arange(0, 1, 0.25), ref.arange(0, 1, 0.25, "f32"))
  same(tp.arange(3, 3), ref.arange(3, 3, 1, "f32"))
  same(tp.arange(-2, 7, 2, {dtype = "i64"}), ref.arange(-2, 7, 2, "i64"))
  same(tp.arange(1, 13, {dtype = "i32"}), ref.arange(1, 13, 1, "i32"))
  same(tp.arange(0, 1, 0.1, {dtype = "f64"}), ref.arange(0, 1, 0.1, "f64"))
  eq(tp.arange(0, 1, 0.1):numel(), 11, "the last point survives rounding")
end)

test("linspace", function()
  near(tp.linspace(0, 1, 5):totable(), {0, 0.25, 0.5, 0.75, 1})
  eq(tp.linspace(0, 1, 5).dtype, "f32")
  local x = tp.linspace(-1, 2, 7, {dtype = "f64"})
  eq(x.dtype, "f64")
  near(x:totable(), {-1, -0.5, 0, 0.5, 1, 1.5, 2}, 1e-12)
  eq(tp.linspace(3, 3, 1):totable(), {3})
  local y = tp.linspace(0, 1, 11, {dtype = "f64"}):totable()
  eq(y[1], 0)
  eq(y[11], 1)
end)

test("rand.seeded", function()
  local a = tp.rand({100}, {seed = 42}):totable()
  local b = tp.rand({100}, {seed = 42}):totable()
  local c = tp.rand({100}, {seed = 43}):totable()
  eq(a, b, "same seed, same values")
  local differ = 0
  for i = 1, 100 do
    check.truthy(a[i] >= 0 and a[i] < 1, "in [0,1)")
    if a[i] ~= c[i] then differ = differ + 1 end
  end
  check.truthy(differ > 90, "different seeds differ")
  eq(tp.rand({3, 4}, {seed = 1}).dtype, "f32")
  eq(tp.rand({3}, {seed = 1, dtype = "f64"}).dtype, "f64")
end)

test("rand.prefix_independent", function()
  -- keyed by element index: a larger tensor starts with the same values
  local a = tp.rand({10}, {seed = 5}):totable()
  local b = tp.rand({20}, {seed = 5}):totable()
  for i = 1, 10 do eq(a[i], b[i]) end
end)

test("rand.prefix_large", function()
  local a = tp.rand({40000}, {seed = 6}):totable()
  local b = tp.rand({70001}, {seed = 6}):totable()
  for i = 1, 40000 do
    if a[i] ~= b[i] then eq(b[i], a[i], "element " .. i) end
  end
  local n = tp.randn({2, 35000}, {seed = 6}):totable()
  local m = tp.randn({70000}, {seed = 6}):totable()
  eq(n[2][1], m[35001], "the index is the row-major element index")
end)

test("rand.unseeded_advances", function()
  tp.seed(123)
  local a = tp.rand({8}):totable()
  local b = tp.rand({8}):totable()
  check.truthy(check.show(a) ~= check.show(b), "successive draws differ")
  tp.seed(123)
  eq(tp.rand({8}):totable(), a, "tp.seed restarts the sequence")
end)

test("rand.moments", function()
  local u = tp.rand({100000}, {seed = 7})
  near(u:mean():item(), 0.5, 0.01)
  near(u:min():item(), 0, 0.001)
  near(u:max():item(), 1, 0.001)
  local n = tp.randn({100000}, {seed = 8})
  near(n:mean():item(), 0, 0.01)
  near(n:std():item(), 1, 0.01)
  local n64 = tp.randn({100000}, {seed = 9, dtype = "f64"})
  eq(n64.dtype, "f64")
  near(n64:std():item(), 1, 0.01)
  eq(tp.randn({4}, {seed = 3}):totable(), tp.randn({4}, {seed = 3}):totable())
end)

test("print", function()
  eq(tostring(tp.tensor{{1, 2.5}, {-3, 4}}), "[[ 1.   2.5]\n [-3.   4. ]]\n[f32 tensor of shape {2,2}]")
  eq(tostring(tp.tensor({1, 2}, {dtype = "i64"})), "[1 2]\n[i64 tensor of shape {2}]")
  eq(tostring(tp.tensor{true, false}), "[ true false]\n[bool tensor of shape {2}]")
  check.truthy(tostring(tp.arange(1, 5000)):find("...", 1, true), "summarized")
end)

check.summary()
