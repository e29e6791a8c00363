-- tp.grad through the stdlib composites (built from primitives, so no rules of their own).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local gc = require "gradcheck"
local nn = require "tapestry.nn"
local fem = require "tapestry.fem"
local test = check.test

test("nn.linear", function() gc.check("linear", nn.linear, {{3, 4}, {4, 2}, {2}}) end)
test("nn.mlp", function()
  gc.check("mlp", function(x, w1, b1, w2)
    return nn.mlp(x, {{w = w1, b = b1}, {w = w2}}, "tanh")
  end, {{3, 2}, {2, 4}, {4}, {4, 2}})
end)
test("nn.softmax", function() gc.check("softmax", function(x) return nn.softmax(x, 2) end, {{2, 4}}) end)
test("nn.log_softmax", function() gc.check("log_softmax", nn.log_softmax, {{3, 3}}) end)
test("nn.layernorm", function()
  gc.check("layernorm", function(x, w, b) return nn.layernorm(x, {weight = w, bias = b}) end,
           {{2, 4}, {4}, {4}})
end)
test("nn.cross_entropy", function()
  gc.check("cross_entropy.indices", function(x) return nn.cross_entropy(x, {2, 1, 3}) end, {{3, 3}})
  gc.check("cross_entropy.probs", function(x, p) return nn.cross_entropy(x, p:abs()) end, {{2, 3}, {2, 3}})
end)
test("nn.attention", function()
  gc.check("attention", function(q, k, v) return (nn.attention(q, k, v, {causal = true})) end,
           {{2, 3, 2}, {2, 4, 2}, {2, 4, 3}}, {lo = -1, hi = 1})
end)
test("nn.conv1d", function()
  gc.check("conv1d", function(x, w, b) return nn.conv1d(x, w, {bias = b, stride = 2, padding = "valid"}) end,
           {{2, 2, 7}, {3, 2, 3}, {3}})
  gc.check("conv1d.same", function(x, w) return nn.conv1d(x, w, {padding = "same", groups = 2}) end,
           {{1, 2, 5}, {2, 1, 2}})
end)
test("nn.conv3d", function()
  gc.check("conv3d", function(x, w, b) return nn.conv3d(x, w, {padding = {1, 0, 1}, stride = {2, 1, 1}, bias = b}) end,
           {{1, 2, 4, 3, 3}, {2, 2, 2, 2, 2}, {2}})
  gc.check("conv3d.groups", function(x, w) return nn.conv3d(x, w, {groups = 2, dilation = {2, 1, 1}}) end,
           {{1, 2, 4, 2, 2}, {2, 1, 2, 2, 1}})
end)
test("nn.nll_loss", function()
  local wc = tp.tensor({1, 2, 0.5}, {dtype = "f64"})
  gc.check("nll_loss", function(x) return nn.nll_loss(nn.log_softmax(x, 2), {2, 1, 3, 1}, {weight = wc, ignore_index = 3}) end,
           {{4, 3}})
  gc.check("cross_entropy.none", function(x) return nn.cross_entropy(x, {2, 1}, {reduction = "none"}) end, {{2, 3}})
end)
test("nn.batchnorm", function()
  gc.check("batchnorm", function(x, g, b) return (nn.batchnorm(x, {weight = g, bias = b})) end,
           {{3, 2, 2}, {2}, {2}})
  local rm, rv = tp.tensor({0.1, -0.2}, {dtype = "f64"}), tp.tensor({1.5, 0.5}, {dtype = "f64"})
  gc.check("batchnorm.eval", function(x) return (nn.batchnorm(x, {running_mean = rm, running_var = rv, training = false})) end,
           {{2, 2, 3}})
end)
test("nn.embedding", function()
  gc.check("embedding", function(w) return nn.embedding({{2, 1}, {2, 4}}, w) end, {{4, 3}})
end)
test("nn.dropout", function()
  gc.check("dropout", function(x) return nn.dropout(x, 0.4, {seed = 11}) end, {{5, 6}})
end)
test("fem.laplacian", function()
  gc.check("laplacian", function(u) return fem.laplacian(u) end, {{4, 5}})
  gc.check("laplacian.periodic", function(u) return fem.laplacian(u, {boundary = "periodic"}) end, {{3, 4}})
  gc.check("heat_step", function(u) return fem.heat_step(u, 0.2, {boundary = "reflect"}) end, {{4, 3}})
end)

-- A least-squares fit by gradient descent on named tensors, checked against the closed form.
test("nn.sgd.least_squares", function()
  local x = tp.detach(tp.randn({20, 3}, {seed = 5, dtype = "f64"}))
  local y = x:matmul(tp.tensor({1, -2, 0.5}, {dtype = "f64"})) + 0.25
  tp.env.lsq_w = tp.detach(tp.zeros({3}, {dtype = "f64"}))
  tp.env.lsq_b = tp.detach(tp.zeros({}, {dtype = "f64"}))
  local loss
  for _ = 1, 300 do
    loss = (x:matmul(tp.env.lsq_w) + tp.env.lsq_b - y):square():mean()
    local ps = {tp.env.lsq_w, "lsq_b"}
    nn.sgd(ps, tp.grad(loss, {tp.env.lsq_w, tp.env.lsq_b}), 0.1, {momentum = 0.5, eval = {loss}})
  end
  check.near(tp.env.lsq_w:totable(), {1, -2, 0.5}, 1e-6)
  check.near(tp.env.lsq_b:item(), 0.25, 1e-6)
  check.truthy(loss:item() < 1e-10, "loss " .. loss:item())
  check.truthy(tp.env.__sgd_v_lsq_w ~= nil, "momentum kept in the environment")
  for _, n in ipairs{"lsq_w", "lsq_b", "__sgd_v_lsq_w", "__sgd_v_lsq_b"} do tp.env[n] = nil end
end)

test("nn.adam.first_step", function()
  -- Adam's first step moves every coordinate by lr (up to eps): m/sqrt(v) = sign(g).
  tp.env.aw = tp.detach(tp.tensor({1, -1, 2}, {dtype = "f64"}))
  local loss = (tp.env.aw * tp.tensor({3, 0.5, -2}, {dtype = "f64"})):sum()
  nn.adam({tp.env.aw}, tp.grad(loss, {tp.env.aw}), {lr = 0.1})
  check.near(tp.env.aw:totable(), {0.9, -1.1, 2.1}, 1e-7)
  check.eq(tp.env.__adam_t_aw:item(), 1)
  check.eq(tp.env.__adam_m_aw.shape, {3})
  loss = (tp.env.aw * tp.tensor({3, 0.5, -2}, {dtype = "f64"})):sum()
  nn.adam({"aw"}, tp.grad(loss, {tp.env.aw}), {lr = 0.1, weight_decay = 0})
  check.eq(tp.env.__adam_t_aw:item(), 2)
  check.near(tp.env.aw:totable(), {0.8, -1.2, 2.2}, 1e-7)  -- a constant gradient: steps of lr
  for _, n in ipairs{"aw", "__adam_m_aw", "__adam_v_aw", "__adam_t_aw"} do tp.env[n] = nil end
end)

check.summary()
