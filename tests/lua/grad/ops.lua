-- tp.grad against central finite differences, op by op, through the Lua surface (f64).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local gc = require "gradcheck"
local test = check.test

for _, name in ipairs{"neg", "abs", "exp", "sin", "cos", "tanh", "sigmoid", "relu", "gelu",
                      "square", "reciprocal", "floor", "round", "sign"} do
  test("unary." .. name, function() gc.check(name, tp[name], {{2, 3}}) end)
end
for _, name in ipairs{"log", "sqrt", "rsqrt"} do
  test("unary." .. name, function() gc.check(name, tp[name], {{5}}, {lo = 0.3, hi = 3}) end)
end

test("binary.operators", function()
  gc.check("a+b*a-b/a", function(a, b) return a + b * a - b / a end, {{2, 3}, {3}}, {lo = 0.3})
  gc.check("a^b", function(a, b) return a ^ b end, {{4}, {4}}, {lo = 0.3, hi = 2})
  gc.check("a%b", function(a, b) return a % b end, {{4}, {1}}, {lo = 0.3, hi = 3})
  gc.check("-a + 2", function(a) return -a + 2 end, {{3}})
end)
test("binary.functions", function()
  gc.check("maximum", tp.maximum, {{2, 3}, {2, 1}})
  gc.check("minimum", tp.minimum, {{3}, {2, 3}})
  gc.check("atan2", tp.atan2, {{4}, {4}})
  gc.check("where", function(a, b) return tp.where(a:gt(0), a, b) end, {{2, 3}, {3}})
  gc.check("clamp", function(a) return a:clamp(-0.5, 0.5) end, {{6}})
  gc.check("maximum.tie", tp.maximum, {{3}, {3}}, {inputs = {{1, 2, 3}, {1, 0, 3}}})
end)

test("reductions", function()
  for _, name in ipairs{"sum", "prod", "max", "min", "mean"} do
    gc.check(name, function(x) return x[name](x, 2) end, {{2, 3, 2}})
    gc.check(name .. ".all", function(x) return x[name](x) end, {{2, 3}})
  end
  gc.check("var", function(x) return x:var(1, {correction = 1}) end, {{4, 2}})
  gc.check("std", function(x) return x:std(nil, {keepdim = true}) end, {{3, 2}})
  gc.check("norm", function(x) return x:norm(2, 2) end, {{3, 4}})
  gc.check("prod.zero", function(x) return x:prod(2) end, {{2, 3}}, {inputs = {{0, 2, 3, 1.5, 0, 0}}})
  gc.check("max.tie", function(x) return x:max(2) end, {{2, 2}}, {inputs = {{1, 1, 2, -1}}})
end)

test("contractions", function()
  gc.check("matmul", tp.matmul, {{3, 4}, {4, 2}})
  gc.check("matmul.batch", tp.matmul, {{2, 3, 4}, {4, 2}})
  gc.check("matmul.vec", tp.matmul, {{4}, {2, 4, 3}})
  gc.check("einsum", function(a, b, c) return tp.einsum("ij,jk,kl->il", a, b, c) end, {{2, 3}, {3, 2}, {2, 2}})
  gc.check("einsum.trace", function(a) return tp.einsum("ii", a) end, {{3, 3}})
  gc.check("tensordot", function(a, b) return tp.tensordot(a, b, 1) end, {{2, 3}, {3, 2}})
  gc.check("outer", tp.outer, {{3}, {2}})
end)

test("shape", function()
  gc.check("reshape.t", function(x) return x:reshape{3, 2}:t():exp() end, {{2, 3}})
  gc.check("permute", function(x) return x:permute{3, 1, 2} end, {{2, 3, 2}})
  gc.check("expand", function(x) return x:expand{2, 3, 4} end, {{3, 1}})
  gc.check("index", function(x) return x[{{2, 3}, 2}] end, {{3, 4}})
  gc.check("narrow.select", function(x) return x:narrow(2, 2, 2):select(1, 1) end, {{2, 4}})
  gc.check("squeeze.flatten", function(x) return x:unsqueeze(1):squeeze():flatten() end, {{2, 3}})
  gc.check("cat.stack", function(a, b) return tp.stack({tp.cat({a, b}, 1), tp.cat({b, a}, 1)}, 2) end, {{2}, {3}})
  gc.check("pad", function(x) return x:pad({1, 2, 0, 1}, {mode = "reflect"}) end, {{3, 4}})
  gc.check("roll", function(x) return x:roll(1, 2) end, {{2, 3}})
end)

test("windows", function()
  for _, b in ipairs{"zero", "periodic", "reflect"} do
    gc.check("stencil." .. b, function(x, k) return tp.stencil(x, k, {boundary = b}) end, {{4, 5}, {3, 3}})
  end
  gc.check("conv2d", function(x, w) return tp.conv2d(x, w, {stride = 2, padding = 1}) end,
           {{1, 2, 5, 5}, {3, 2, 3, 3}})
  gc.check("conv2d.groups", function(x, w) return tp.conv2d(x, w, {groups = 2, dilation = 2}) end,
           {{1, 2, 5, 5}, {4, 1, 2, 2}})
  gc.check("maxpool2d", function(x) return tp.maxpool2d(x, 2) end, {{1, 2, 4, 4}})
  gc.check("avgpool2d", function(x) return tp.avgpool2d(x, 3, {stride = 2, padding = 1}) end, {{1, 1, 5, 4}})
end)

test("graph.shared_and_named", function()
  tp.env.gw = tp.detach(tp.tensor({1, 2, 3}, {dtype = "f64"}))
  local w = tp.env.gw
  local e = w:exp()
  local loss = (e * e + e * w):sum()
  local g = tp.grad(loss, {w, tp.env.gw})
  local ex = {}
  for i, v in ipairs{1, 2, 3} do ex[i] = 2 * math.exp(2 * v) + math.exp(v) * (v + 1) end
  check.near(g[1]:totable(), ex, 1e-12)
  check.near(g[2]:totable(), ex, 1e-12)
  tp.env.gw = nil
end)

test("graph.unrelated_param_is_zero", function()
  local x, y = tp.tensor{1, 2}, tp.detach(tp.ones{2, 2})
  local g = tp.grad(x:sum(), {y, x})
  check.eq(g[1]:totable(), {{0, 0}, {0, 0}})
  check.eq(g[1].dtype, "f32")
  check.eq(g[2]:totable(), {1, 1})
end)

test("graph.one_element_loss", function()
  local x = tp.tensor({{2}}, {dtype = "f64"})
  check.eq(tp.grad(x * x, {x})[1]:totable(), {{4}})
end)

check.summary()
