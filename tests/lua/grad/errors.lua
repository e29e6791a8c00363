-- Bad inputs to tp.grad, tp.detach and the optimizers: clear errors, the session survives.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local nn = require "tapestry.nn"
local mistake = check.mistake

local x = tp.tensor{1, 2, 3}
mistake("grad.non_scalar", function() tp.grad(x * 2, {x}) end,
        "tp.grad: the loss must be a scalar (one element), got shape {3}")
mistake("grad.int_loss", function() tp.grad(tp.tensor(3, {dtype = "i64"}), {x}) end,
        "tp.grad: the loss must be a real float (f16, bf16, f32, f64), got i64")
mistake("grad.params_not_table", function() tp.grad(x:sum(), x) end,
        "bad argument #2 to 'tp.grad' (table of Tensors expected, got userdata)")
mistake("grad.param_not_tensor", function() tp.grad(x:sum(), {x, "w"}) end,
        "bad argument #2 to 'tp.grad' (params[2] must be a Tensor, got string)")
mistake("grad.int_param", function()
  local i = tp.tensor({1, 2, 3}, {dtype = "i64"})
  tp.grad((x * i):sum(), {i})
end, "tp.grad: params[1] is i64: only float and complex tensors (f16, bf16, f32, f64, c64, c128) are differentiable")
mistake("grad.constant_param", function() tp.grad(x:sum(), {tp.zeros{3}}) end,
        "tp.grad: params[1] {3} is a constant", "tp.detach")
mistake("grad.loss_not_tensor", function() tp.grad(1, {x}) end,
        "bad argument #1 to 'tp.grad' (Tensor expected, got number)")
mistake("detach.not_tensor", function() tp.detach(x, {}) end,
        "bad argument #2 to 'tp.detach' (Tensor expected, got table)")

tp.env.ew = tp.detach(tp.ones{2})
mistake("sgd.unnamed", function() nn.sgd({x}, {x}, 0.1) end,
        "tapestry.nn.sgd: params[1] must be a named tensor (tp.env.NAME) or a name, got an unnamed Tensor")
mistake("sgd.unbound", function() nn.sgd({"nope"}, {x}, 0.1) end, "tapestry.nn.sgd: params[1]: tp.env.nope is not bound")
mistake("sgd.grad_shape", function() nn.sgd({tp.env.ew}, {x}, 0.1) end,
        "tapestry.nn.sgd: grads[1] has shape {3} but tp.env.ew has {2}")
mistake("sgd.count", function() nn.sgd({"ew"}, {}, 0.1) end, "tapestry.nn.sgd: grads must be a sequence of 1 tensors")
mistake("sgd.lr", function() nn.sgd({"ew"}, {tp.ones{2}}, -1) end, "tapestry.nn.sgd: lr must be a positive number")
mistake("adam.option", function() nn.adam({"ew"}, {tp.ones{2}}, {lr = 0.1, beta = 0.9}) end,
        "tapestry.nn.adam: unknown option 'beta'")
mistake("adam.beta", function() nn.adam({"ew"}, {tp.ones{2}}, {beta2 = 1}) end,
        "tapestry.nn.adam: opts.beta2 must be a number in [0, 1)")
check.test("params_survive_optimizer_errors", function()
  check.eq(tp.env.ew:totable(), {1, 1})
  check.eq(tp.env.__sgd_v_ew, nil)
  check.eq(tp.env.__adam_m_ew, nil)
end)

check.summary()
