-- Bad inputs to the stdlib: each error names the function and the argument, and the session
-- (and a named tensor) survives it.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local nn = require "tapestry.nn"
local fem = require "tapestry.fem"
local linalg = require "tapestry.linalg"
local mistake = check.mistake

local x23, w34 = tp.ones{2, 3}, tp.ones{3, 4}

mistake("nn.linear.w_1d", function() nn.linear(x23, tp.ones{3}) end,
        "tapestry.nn.linear: w must be 2-D, got {3}")
mistake("nn.linear.inner", function() nn.linear(x23, tp.ones{4, 4}) end,
        "tapestry.nn.linear:", "{2,3}", "{4,4}")
mistake("nn.linear.bias", function() nn.linear(x23, w34, tp.ones{3}) end,
        "tapestry.nn.linear: b must be {4}", "got {3}")
mistake("nn.linear.not_tensor", function() nn.linear({1, 2}, w34) end,
        "tapestry.nn.linear: x must be a Tensor, got table")
mistake("nn.mlp.empty", function() nn.mlp(x23, {}) end, "tapestry.nn.mlp: layers must be")
mistake("nn.mlp.chain", function() nn.mlp(x23, {{w = w34}, {w = tp.ones{3, 2}}}) end,
        "tapestry.nn.mlp:", "layers[2].w", "{2,4}", "{3,2}")
mistake("nn.mlp.act", function() nn.mlp(x23, {{w34}}, "nope") end, "tapestry.nn.mlp: act", "'nope'")
mistake("nn.softmax.dim", function() nn.softmax(x23, 3) end, "tapestry.nn.softmax: d = 3 is out of range")
mistake("nn.log_softmax.dim", function() nn.log_softmax(x23, 1.5) end, "tapestry.nn.log_softmax: d must be")
mistake("nn.layernorm.option", function() nn.layernorm(x23, {epsilon = 1}) end,
        "tapestry.nn.layernorm: unknown option 'epsilon'")
mistake("nn.layernorm.weight", function() nn.layernorm(x23, {weight = tp.ones{2}}) end,
        "tapestry.nn.layernorm: opts.weight must be {3}")
mistake("nn.cross_entropy.logits", function() nn.cross_entropy(tp.ones{3}, {1}) end,
        "tapestry.nn.cross_entropy: logits must have at least 2 dimensions, got {3}")
mistake("nn.cross_entropy.label_range", function() nn.cross_entropy(x23, {1, 4}) end,
        "tapestry.nn.cross_entropy: labels[2] = 4 is not a class index in 1..3")
mistake("nn.cross_entropy.label_shape", function() nn.cross_entropy(x23, tp.ones{2, 2}) end,
        "tapestry.nn.cross_entropy: labels must be", "{2,2}")
mistake("nn.cross_entropy.batch", function() nn.cross_entropy(x23, tp.tensor({1, 2, 3}, {dtype = "i64"})) end,
        "tapestry.nn.cross_entropy: labels must be i32/i64 class indices {2} for logits {2,3}, got i64 {3}")
mistake("nn.attention.dims", function() nn.attention(tp.ones{2, 3}, tp.ones{4, 5}, tp.ones{4, 2}) end,
        "tapestry.nn.attention: q and k must share the last dim: {2,3} vs {4,5}")
mistake("nn.attention.keys", function() nn.attention(tp.ones{2, 3}, tp.ones{4, 3}, tp.ones{5, 2}) end,
        "tapestry.nn.attention: k and v must have as many keys")
mistake("nn.attention.option", function() nn.attention(x23, x23, x23, {casual = true}) end,
        "tapestry.nn.attention: unknown option 'casual'")

mistake("fem.laplacian.boundary", function() fem.laplacian(x23, {boundary = "mirror"}) end,
        "tapestry.fem.laplacian: opts.boundary must be 'zero', 'periodic' or 'reflect', got 'mirror'")
mistake("fem.laplacian.reflect_small", function() fem.laplacian(tp.ones{1, 4}, {boundary = "reflect"}) end,
        "tapestry.fem.laplacian: the reflect boundary needs at least 2 points")
mistake("fem.laplacian.scalar", function() fem.laplacian(tp.tensor(1)) end,
        "tapestry.fem.laplacian: u must have at least 1 dimension, got {}")
mistake("fem.heat_step.alpha", function() fem.heat_step(x23, "fast") end,
        "tapestry.fem.heat_step: alpha must be a Tensor or a number, got string")
mistake("fem.jacobi.square", function() fem.jacobi(x23, tp.ones{2}) end,
        "tapestry.fem.jacobi: a must be square, got {2,3}")
mistake("fem.jacobi.b", function() fem.jacobi(tp.eye(3), tp.ones{2}) end,
        "tapestry.fem.jacobi: b {2} does not match a {3,3}")
mistake("fem.jacobi.zero_diag", function() fem.jacobi(tp.tensor{{0, 1}, {1, 0}}, tp.ones{2}) end,
        "tapestry.fem.jacobi: a has a zero on its diagonal")
mistake("fem.jacobi.maxiter", function() fem.jacobi(tp.eye(2), tp.ones{2}, {maxiter = 0}) end,
        "tapestry.fem.jacobi: opts.maxiter must be a positive integer, got 0")

mistake("linalg.cg.square", function() linalg.cg(x23, tp.ones{2}) end,
        "tapestry.linalg.cg: a must be square, got {2,3}")
mistake("linalg.cg.b", function() linalg.cg(tp.eye(3), tp.ones{3, 1}) end,
        "tapestry.linalg.cg: b must be {3} to match a {3,3}, got {3,1}")
mistake("linalg.cg.tol", function() linalg.cg(tp.eye(3), tp.ones{3}, {tol = -1}) end,
        "tapestry.linalg.cg: opts.tol must be a positive number, got -1")
mistake("linalg.cg.x0", function() linalg.cg(tp.eye(3), tp.ones{3}, {x0 = tp.ones{2}}) end,
        "tapestry.linalg.cg: opts.x0 must have b's shape {3}, got {2}")
mistake("linalg.power_iteration.square", function() linalg.power_iteration(tp.ones{2, 3}) end,
        "tapestry.linalg.power_iteration: a must be square, got {2,3}")
mistake("linalg.power_iteration.vector", function() linalg.power_iteration(tp.ones{3}) end,
        "tapestry.linalg.power_iteration: a must be 2-D, got {3}")
mistake("linalg.norm.p", function() linalg.norm(x23, 0) end,
        "tapestry.linalg.norm: p for a matrix {2,3} must be 'fro', 'nuc'")
mistake("linalg.norm.x", function() linalg.norm(3) end, "tapestry.linalg.norm: x must be a Tensor, got number")

local x137, w133 = tp.ones{1, 3, 7}, tp.ones{4, 3, 3}
mistake("nn.conv1d.x_rank", function() nn.conv1d(tp.ones{7}, w133) end,
        "tapestry.nn.conv1d: x must be {N, C, L} or {C, L}, got 1-D {7}")
mistake("nn.conv1d.w_rank", function() nn.conv1d(x137, tp.ones{4, 3}) end, "tapestry.nn.conv1d: w must be 3-D, got {4,3}")
mistake("nn.conv1d.channels", function() nn.conv1d(x137, tp.ones{4, 2, 3}) end,
        "tapestry.nn.conv1d: w {4,2,3} must have C/groups = 3 input channels", "x {1,3,7}")
mistake("nn.conv1d.groups", function() nn.conv1d(x137, w133, {groups = 2}) end,
        "tapestry.nn.conv1d: opts.groups = 2 must divide the channels of x {1,3,7} (3)")
mistake("nn.conv1d.stride", function() nn.conv1d(x137, w133, {stride = 0}) end,
        "tapestry.nn.conv1d: opts.stride[1] must be an integer >= 1, got 0")
mistake("nn.conv1d.same_stride", function() nn.conv1d(x137, w133, {padding = "same", stride = 2}) end,
        "tapestry.nn.conv1d: opts.padding = 'same' needs stride 1")
mistake("nn.conv1d.too_small", function() nn.conv1d(tp.ones{1, 3, 2}, w133) end,
        "tapestry.nn.conv1d: spatial dim 1 of x {1,3,2} is 2 with padding, smaller than the dilated kernel (3)")
mistake("nn.conv1d.bias", function() nn.conv1d(x137, w133, {bias = tp.ones{3}}) end,
        "tapestry.nn.conv1d: opts.bias must be {4}", "got {3}")
mistake("nn.conv3d.padding", function() nn.conv3d(tp.ones{1, 1, 3, 3, 3}, tp.ones{1, 1, 1, 1, 1}, {padding = {1, 1}}) end,
        "tapestry.nn.conv3d: opts.padding must be a number or a sequence of 3 numbers, got 2 entries")
mistake("nn.conv3d.option", function() nn.conv3d(tp.ones{1, 1, 3, 3, 3}, tp.ones{1, 1, 1, 1, 1}, {pad = 1}) end,
        "tapestry.nn.conv3d: unknown option 'pad'")
local logp = tp.zeros{4, 3}
mistake("nn.nll_loss.labels_shape", function() nn.nll_loss(logp, tp.ones({3}, {dtype = "i64"})) end,
        "tapestry.nn.nll_loss: labels must be i32/i64 class indices {4} for logp {4,3}, got i64 {3}")
mistake("nn.nll_loss.labels_dtype", function() nn.nll_loss(logp, tp.ones{4}) end,
        "tapestry.nn.nll_loss: labels must be i32/i64 class indices {4}", "got f32 {4}")
mistake("nn.nll_loss.table", function() nn.nll_loss(logp, {1, 2, 4, 1}) end,
        "tapestry.nn.nll_loss: labels[3] = 4 is not a class index in 1..3")
mistake("nn.nll_loss.weight", function() nn.nll_loss(logp, {1, 2, 3, 1}, {weight = tp.ones{2}}) end,
        "tapestry.nn.nll_loss: opts.weight must be {3} (one weight per class), got {2}")
mistake("nn.nll_loss.reduction", function() nn.nll_loss(logp, {1, 2, 3, 1}, {reduction = "avg"}) end,
        "tapestry.nn.nll_loss: opts.reduction must be 'mean', 'sum' or 'none', got avg")
mistake("nn.nll_loss.ignore", function() nn.nll_loss(logp, {1, 2, 3, 1}, {ignore_index = 0.5}) end,
        "tapestry.nn.nll_loss: opts.ignore_index must be an integer, got 0.5")
mistake("nn.cross_entropy.ignore_probs", function() nn.cross_entropy(logp, tp.ones{4, 3}, {ignore_index = 1}) end,
        "tapestry.nn.cross_entropy: unknown option 'ignore_index'")
mistake("nn.embedding.dtype", function() nn.embedding(tp.ones{2}, tp.ones{3, 2}) end,
        "tapestry.nn.embedding: indices must be i32 or i64, got f32 {2}")
mistake("nn.embedding.weight", function() nn.embedding({1}, tp.ones{3}) end,
        "tapestry.nn.embedding: weight must be 2-D, got {3}")
mistake("nn.dropout.p", function() nn.dropout(tp.ones{3}, 1.5) end,
        "tapestry.nn.dropout: p must be a probability in [0, 1], got 1.5")
mistake("nn.dropout.int", function() nn.dropout(tp.ones({3}, {dtype = "i32"}), 0.5) end,
        "tapestry.nn.dropout: x must be f32 or f64, got i32")
mistake("nn.batchnorm.weight", function() nn.batchnorm(tp.ones{4, 3}, {weight = tp.ones{4}}) end,
        "tapestry.nn.batchnorm: opts.weight must be {3} (the channels, dim 2 of x {4,3}), got {4}")
mistake("nn.batchnorm.pair", function() nn.batchnorm(tp.ones{4, 3}, {running_mean = tp.zeros{3}}) end,
        "tapestry.nn.batchnorm: opts.running_mean and opts.running_var go together (got only running_mean)")
mistake("nn.batchnorm.eval", function() nn.batchnorm(tp.ones{4, 3}, {training = false}) end,
        "tapestry.nn.batchnorm: opts.training = false needs opts.running_mean and opts.running_var")
mistake("nn.batchnorm.one_value", function() nn.batchnorm(tp.ones{1, 3}) end,
        "tapestry.nn.batchnorm: training needs more than one value per channel, x {1,3} has 1")

check.summary()
