-- tp.save / tp.load: every dtype and several shapes survive a round trip through .npy.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local function tmp()
  local p = os.tmpname()
  os.remove(p)
  return p .. ".npy"
end

local samples = {
  f32 = {{1.5, -2.25, 0}, {3, 4.5, -1e-3}},
  f64 = {{0.1, 1 / 3}, {-2.5, 1e300}},
  i32 = {{1, -2, 3}, {2147483647, -2147483648, 0}},
  i64 = {{9007199254740993, -4}, {0, 1}},
  bool = {{true, false}, {false, true}},
}

for dtype, data in pairs(samples) do
  test("roundtrip." .. dtype, function()
    local x = tp.tensor(data, {dtype = dtype})
    local p = tmp()
    tp.save(x, p)
    local y = tp.load(p)
    eq(y.dtype, dtype)
    eq(y.shape, x.shape)
    eq(y:totable(), x:totable())
    os.remove(p)
  end)
end

test("roundtrip.shapes", function()
  for _, shape in ipairs({{1}, {5}, {2, 3, 4}, {1, 1, 1, 1}}) do
    local x = tp.arange(1, tp.zeros(shape):numel()):reshape(shape)
    local p = tmp()
    tp.save(x, p)
    local y = tp.load(p)
    eq(y.shape, shape)
    eq(y:totable(), x:totable())
    os.remove(p)
  end
end)

test("roundtrip.scalar", function()
  local p = tmp()
  tp.save(tp.tensor(2.5, {dtype = "f64"}), p)
  local y = tp.load(p)
  eq(y.shape, {})
  eq(y:item(), 2.5)
  tp.save(7, p)  -- a number is a scalar tensor too
  eq(tp.load(p):item(), 7)
  os.remove(p)
end)

test("save.observes_an_expression", function()
  local p = tmp()
  local x = tp.arange(1, 6) * 2
  tp.save(x:reshape{2, 3}:t(), p)  -- a transposed (strided) value
  eq(tp.load(p):totable(), {{2, 8}, {4, 10}, {6, 12}})
  os.remove(p)
end)

test("load.opts_dtype_casts", function()
  local p = tmp()
  tp.save(tp.tensor{1.75, -2.5}, p)
  local y = tp.load(p, {dtype = "i32"})
  eq(y.dtype, "i32")
  eq(y:totable(), {1, -2})
  eq(tp.load(p, {dtype = "f32"}).dtype, "f32")
  os.remove(p)
end)

test("load.opts_name_binds", function()
  local p = tmp()
  tp.save(tp.tensor{{1, 2}, {3, 4}}, p)
  local w = tp.load(p, {name = "loaded_w"})
  eq(w.name, "loaded_w")
  eq(tp.env.loaded_w:totable(), {{1, 2}, {3, 4}})
  tp.load(p, {name = "loaded_w", dtype = "f64"})  -- rebinding, lazily cast
  eq(tp.env.loaded_w.dtype, "f64")
  eq(tp.env.loaded_w:sum():item(), 10)
  tp.env.loaded_w = nil
  os.remove(p)
end)

test("save.overwrites", function()
  local p = tmp()
  tp.save(tp.ones{3}, p)
  tp.save(tp.zeros{2, 2, 2}, p)
  eq(tp.load(p).shape, {2, 2, 2})
  os.remove(p)
end)

check.summary()
