-- tapestry.nn: neural-network building blocks written with tp's lazy ops.
--   local nn = require "tapestry.nn"
--   local y = nn.mlp(x, {{w = w1, b = b1}, {w = w2, b = b2}})   -- relu between layers
--   local loss = nn.cross_entropy(y, labels)
-- Everything here returns lazy tensors: nothing runs until a value is observed, and the
-- planner sees (and fuses, and shards) the whole composite as if it were written by hand.
local tp = require "tapestry"
local args = require "tapestry.args"

local nn = {}
local shape_str = args.shape_str

-- y = x·w + b: x is {..., in}, w is {in, out}, b (optional) is {out} or a number.
-- w is stored in-by-out (not Torch's out-by-in) so the product reads as written.
local function affine(fname, x, w, b, wname, bname)
  args.min_dims(fname, "x", x, 1)
  args.dims(fname, wname, w, 2)
  if x:size(-1) ~= w:size(1) then
    args.fail(fname, "x and %s do not chain: %s · %s (%d ~= %d)", wname, shape_str(x.shape),
              shape_str(w.shape), x:size(-1), w:size(1))
  end
  local y = x:matmul(w)
  if b == nil then return y end
  args.tensor(fname, bname, b, true)
  if args.is_tensor(b) and not (b:dim() == 0 or (b:dim() == 1 and b:size(1) == w:size(2))) then
    args.fail(fname, "%s must be {%d} to match %s %s, got %s", bname, w:size(2), wname,
              shape_str(w.shape), shape_str(b.shape))
  end
  return y + b
end

function nn.linear(x, w, b)
  return affine("tapestry.nn.linear", x, w, b, "w", "b")
end

-- The activation argument of mlp: a function, or the name of a tp elementwise op.
local function activation(fname, act)
  if act == nil then return tp.relu end
  if type(act) == "function" then return act end
  if type(act) == "string" and type(tp[act]) == "function" then return tp[act] end
  args.fail(fname, "act must be a function or the name of a tp function (e.g. 'gelu'), got %s",
            type(act) == "string" and "'" .. act .. "'" or type(act))
end

-- A multi-layer perceptron: linear layers with act between them (not after the last, so the
-- output is raw logits or values). layers is a sequence whose items are {w = W, b = B} or
-- {W, B} (b optional), W of shape {in, out}.
function nn.mlp(x, layers, act)
  local fname = "tapestry.nn.mlp"
  args.min_dims(fname, "x", x, 1)
  if type(layers) ~= "table" or #layers == 0 then
    args.fail(fname, "layers must be a non-empty sequence of {w = W, b = B} tables, got %s",
              type(layers) == "table" and "an empty table" or type(layers))
  end
  local f = activation(fname, act)
  local h = x
  for i, layer in ipairs(layers) do
    if type(layer) ~= "table" then
      args.fail(fname, "layers[%d] must be a table {w = W, b = B} or {W, B}, got %s", i, type(layer))
    end
    local w, b = layer.w or layer[1], layer.b or layer[2]
    h = affine(fname, h, w, b, "layers[" .. i .. "].w", "layers[" .. i .. "].b")
    if i < #layers then h = f(h) end
  end
  return h
end

-- exp(x) / sum(exp(x)) along d (default -1). Subtracting the max along d first makes every
-- exponent <= 0, so nothing overflows: softmax{1000, 1001} == softmax{0, 1}.
function nn.softmax(x, d)
  local fname = "tapestry.nn.softmax"
  args.tensor(fname, "x", x)
  d = args.dim(fname, "d", d or -1, x:dim())
  local e = (x - x:max(d, {keepdim = true})):exp()
  return e / e:sum(d, {keepdim = true})
end

-- log(softmax(x, d)) computed as (x - m) - log(sum(exp(x - m))) with m the max along d:
-- finite where log(softmax) would underflow to log(0) = -inf.
function nn.log_softmax(x, d)
  local fname = "tapestry.nn.log_softmax"
  args.tensor(fname, "x", x)
  d = args.dim(fname, "d", d or -1, x:dim())
  local z = x - x:max(d, {keepdim = true})
  return z - z:exp():sum(d, {keepdim = true}):log()
end

-- Layer normalization over the last dim: (x - mean) / sqrt(var + eps) * weight + bias, with the
-- biased variance (as Torch). opts.eps (default 1e-5) keeps a constant row finite.
function nn.layernorm(x, opts)
  local fname = "tapestry.nn.layernorm"
  args.min_dims(fname, "x", x, 1)
  opts = args.opts(fname, opts, {"eps", "weight", "bias"})
  local eps = opts.eps == nil and 1e-5 or opts.eps
  if type(eps) ~= "number" or not (eps >= 0) then
    args.fail(fname, "opts.eps must be a number >= 0, got %s", tostring(eps))
  end
  local n = x:size(-1)
  for _, key in ipairs{"weight", "bias"} do
    local p = opts[key]
    if p ~= nil then
      args.tensor(fname, "opts." .. key, p, true)
      if args.is_tensor(p) and not (p:dim() == 0 or (p:dim() == 1 and p:size(1) == n)) then
        args.fail(fname, "opts.%s must be {%d} (the last dim of x %s), got %s", key, n,
                  shape_str(x.shape), shape_str(p.shape))
      end
    end
  end
  local mean = x:mean(-1, {keepdim = true})
  local centred = x - mean
  local var = centred:square():mean(-1, {keepdim = true})
  local y = centred * (var + eps):rsqrt()
  if opts.weight ~= nil then y = y * opts.weight end
  if opts.bias ~= nil then y = y + opts.bias end
  return y
end

-- Labels as a Lua sequence of class indices: checked here, then an i64 tensor.
local function labels_from_table(fname, labels, n, c)
  if #labels ~= n then
    args.fail(fname, "labels has %d entries for a batch of %d", #labels, n)
  end
  for i, v in ipairs(labels) do
    if not args.is_int(v) or v < 1 or v > c then
      args.fail(fname, "labels[%d] = %s is not a class index in 1..%d", i, tostring(v), c)
    end
  end
  return tp.tensor(labels, {dtype = "i64"})
end

local function is_int_dtype(t) return t == "i32" or t == "i64" end

-- opts.reduction of the losses: "mean" (default), "sum" or "none".
local function reduction_of(fname, r)
  r = r or "mean"
  if r ~= "mean" and r ~= "sum" and r ~= "none" then
    args.fail(fname, "opts.reduction must be 'mean', 'sum' or 'none', got %s", tostring(r))
  end
  return r
end

-- opts.weight of the losses: a float tensor {C}, or nil.
local function class_weight(fname, w, c)
  if w == nil then return nil end
  args.tensor(fname, "opts.weight", w)
  args.float(fname, "opts.weight", w)
  if w:dim() ~= 1 or w:size(1) ~= c then
    args.fail(fname, "opts.weight must be {%d} (one weight per class), got %s", c, shape_str(w.shape))
  end
  return w
end

-- The negative log-likelihood of class indices (torch.nn.functional.nll_loss, 1-based):
-- logp is {N, C} or {N, C, d1, ...} (log-probabilities, e.g. nn.log_softmax(x, 2)), labels
-- integers {N} or {N, d1, ...} in 1..C (a Lua sequence for {N}). opts.weight {C} weighs each
-- class, opts.ignore_index is a label that contributes nothing, opts.reduction is "mean" (the
-- weighted mean: sum of w[y]*loss over sum of w[y], as torch), "sum" or "none". A label outside
-- 1..C is an error when the loss is evaluated (tp.gather's range check).
local function nll_loss(fname, logp, labels, opts, input)
  input = input or "logp"
  args.min_dims(fname, input, logp, 2)
  args.float(fname, input, logp)
  opts = args.opts(fname, opts, {"weight", "ignore_index", "reduction"})
  local n, c = logp:size(1), logp:size(2)
  if type(labels) == "table" and not args.is_tensor(labels) then
    labels = labels_from_table(fname, labels, n, c)
  end
  args.tensor(fname, "labels", labels)
  local want = {n}
  for i = 3, logp:dim() do want[#want + 1] = logp:size(i) end
  if not is_int_dtype(labels.dtype) or shape_str(labels.shape) ~= shape_str(want) then
    args.fail(fname, "labels must be i32/i64 class indices %s for %s %s, got %s %s", shape_str(want),
              input, shape_str(logp.shape), labels.dtype, shape_str(labels.shape))
  end
  local w = class_weight(fname, opts.weight, c)
  local reduction = reduction_of(fname, opts.reduction)
  local ignore = opts.ignore_index
  if ignore ~= nil and not args.is_int(ignore) then
    args.fail(fname, "opts.ignore_index must be an integer, got %s", tostring(ignore))
  end
  local valid = ignore ~= nil and labels:ne(ignore) or nil
  local idx = labels
  if valid ~= nil then idx = tp.where(valid, idx, 1) end
  -- tp.gather counts negative indices from the end; a class index below 1 is out of range.
  idx = tp.where(idx:ge(1), idx, c + 1)
  local loss = -logp:gather(2, idx:unsqueeze(2)):squeeze(2)
  local wy = w and w:index_select(1, idx:reshape{-1}):reshape(idx.shape) or nil
  if wy ~= nil then loss = loss * wy end
  if valid ~= nil then
    loss = tp.where(valid, loss, 0)
    wy = tp.where(valid, wy or 1, 0)
  end
  if reduction == "none" then return loss end
  if reduction == "sum" then return loss:sum() end
  if wy == nil then return loss:mean() end
  return loss:sum() / wy:sum()
end

function nn.nll_loss(logp, labels, opts)
  return nll_loss("tapestry.nn.nll_loss", logp, labels, opts)
end

-- Cross-entropy of logits {N, C} (or {N, C, d1, ...}) against labels: 1-based class indices
-- (an integer tensor, or a Lua sequence for {N}), which is nn.nll_loss(nn.log_softmax(logits,
-- 2), labels, opts); or per-class targets of logits' shape (one-hot or probabilities, float or
-- bool), -sum_c w_c t_c log p_c per item. opts: weight, reduction as nll_loss; ignore_index
-- for class indices.
function nn.cross_entropy(logits, labels, opts)
  local fname = "tapestry.nn.cross_entropy"
  args.min_dims(fname, "logits", logits, 2)
  local n, c = logits:size(1), logits:size(2)
  if type(labels) == "table" and not args.is_tensor(labels) then
    labels = labels_from_table(fname, labels, n, c)
  end
  args.tensor(fname, "labels", labels)
  local logp = nn.log_softmax(logits, 2)
  if is_int_dtype(labels.dtype) and labels:dim() == logits:dim() - 1 then
    return nll_loss(fname, logp, labels, opts, "logits")
  end
  opts = args.opts(fname, opts, {"weight", "reduction"})
  if shape_str(labels.shape) ~= shape_str(logits.shape) then
    args.fail(fname, "labels must be class indices (i32/i64, logits' shape without dim 2) or targets of logits' shape %s, got %s %s",
              shape_str(logits.shape), labels.dtype, shape_str(labels.shape))
  end
  local terms
  if labels.dtype == "bool" then
    terms = tp.where(labels, logp, 0)  -- where, so a masked -inf never meets 0
  else
    terms = labels * logp
  end
  local w = class_weight(fname, opts.weight, c)
  if w ~= nil then
    local shape = {1, c}
    for _ = 3, logits:dim() do shape[#shape + 1] = 1 end
    terms = terms * w:reshape(shape)
  end
  local loss = -terms:sum(2)
  local reduction = reduction_of(fname, opts.reduction)
  if reduction == "none" then return loss end
  if reduction == "sum" then return loss:sum() end
  return loss:mean()
end

-- Rows of weight {V, D} picked by integer indices of any shape (1-based, as tp.index_select;
-- a Lua sequence is made i64): the result is indices' shape followed by D. The gradient with
-- respect to weight adds each picked row's gradient into its row (index_add).
function nn.embedding(indices, weight)
  local fname = "tapestry.nn.embedding"
  if type(indices) == "table" and not args.is_tensor(indices) then
    indices = tp.tensor(indices, {dtype = "i64"})
  end
  args.tensor(fname, "indices", indices)
  args.dims(fname, "weight", weight, 2)
  if not is_int_dtype(indices.dtype) then
    args.fail(fname, "indices must be i32 or i64, got %s %s", indices.dtype, shape_str(indices.shape))
  end
  local shape = {}
  for i = 1, indices:dim() do shape[i] = indices:size(i) end
  shape[#shape + 1] = weight:size(2)
  return weight:index_select(1, indices:reshape{-1}):reshape(shape)
end

-- Inverted dropout: each element of x zeroed with probability p, the rest scaled by 1/(1-p),
-- so the expectation is x. The mask is tp.rand(x's shape) >= p, keyed by (seed, element index)
-- (Philox): the same seed gives the same mask on any mesh. opts.seed (default: the session's
-- next seed, as tp.rand), opts.training (default true; false returns x).
function nn.dropout(x, p, opts)
  local fname = "tapestry.nn.dropout"
  args.tensor(fname, "x", x)
  args.float(fname, "x", x)
  if type(p) ~= "number" or not (p >= 0 and p <= 1) then
    args.fail(fname, "p must be a probability in [0, 1], got %s", tostring(p))
  end
  opts = args.opts(fname, opts, {"seed", "training"})
  if opts.training == false or p == 0 then return x end
  if p == 1 then return x * 0 end
  local keep = tp.rand(x.shape, {seed = opts.seed, dtype = x.dtype}):ge(p)
  return tp.where(keep, x * (1 / (1 - p)), 0)
end

-- Batch normalization over the channels (dim 2) of x {N, C, ...}: (x - mean) / sqrt(var + eps)
-- * weight + bias, with the mean and the biased variance over every dim but 2 (training), or
-- opts.running_mean and opts.running_var (opts.training = false). Returns y and, when running
-- statistics are given, their new values: (1 - momentum) * running + momentum * batch, the
-- batch variance unbiased, as torch (in evaluation they come back unchanged). Bind them with
-- tp.detach to keep them as plain values: tp.env.rm, tp.env.rv = tp.detach(rm, rv).
-- opts: weight, bias, running_mean, running_var ({C} each), training (true), momentum (0.1),
-- eps (1e-5).
function nn.batchnorm(x, opts)
  local fname = "tapestry.nn.batchnorm"
  args.min_dims(fname, "x", x, 2)
  args.float(fname, "x", x)
  opts = args.opts(fname, opts, {"weight", "bias", "running_mean", "running_var", "training",
                                 "momentum", "eps"})
  local c = x:size(2)
  local vec = {}
  for _, key in ipairs{"weight", "bias", "running_mean", "running_var"} do
    local v = opts[key]
    if v ~= nil then
      args.tensor(fname, "opts." .. key, v)
      if v:dim() ~= 1 or v:size(1) ~= c then
        args.fail(fname, "opts.%s must be {%d} (the channels, dim 2 of x %s), got %s", key, c,
                  shape_str(x.shape), shape_str(v.shape))
      end
      local shape = {1, c}
      for _ = 3, x:dim() do shape[#shape + 1] = 1 end
      vec[key] = v:reshape(shape)
    end
  end
  local rm, rv = opts.running_mean, opts.running_var
  if (rm == nil) ~= (rv == nil) then
    args.fail(fname, "opts.running_mean and opts.running_var go together (got only %s)",
              rm ~= nil and "running_mean" or "running_var")
  end
  local eps = opts.eps == nil and 1e-5 or opts.eps
  if type(eps) ~= "number" or not (eps >= 0) then
    args.fail(fname, "opts.eps must be a number >= 0, got %s", tostring(eps))
  end
  local momentum = opts.momentum == nil and 0.1 or opts.momentum
  if type(momentum) ~= "number" or not (momentum >= 0 and momentum <= 1) then
    args.fail(fname, "opts.momentum must be a number in [0, 1], got %s", tostring(momentum))
  end
  local training = opts.training ~= false
  local mean, var
  if training then
    local dims = {1}
    for d = 3, x:dim() do dims[#dims + 1] = d end
    local count = x:numel() // c
    if count < 2 then
      args.fail(fname, "training needs more than one value per channel, x %s has %d", shape_str(x.shape), count)
    end
    mean = x:mean(dims, {keepdim = true})
    var = (x - mean):square():mean(dims, {keepdim = true})
    if rm ~= nil then
      local bm, bv = mean:reshape{c}, var:reshape{c} * (count / (count - 1))
      rm = rm * (1 - momentum) + bm * momentum
      rv = rv * (1 - momentum) + bv * momentum
    end
  else
    if rm == nil then
      args.fail(fname, "opts.training = false needs opts.running_mean and opts.running_var")
    end
    mean, var = vec.running_mean, vec.running_var
  end
  local y = (x - mean) * (var + eps):rsqrt()
  if vec.weight ~= nil then y = y * vec.weight end
  if vec.bias ~= nil then y = y + vec.bias end
  return y, rm, rv
end

-- Convolutions (stdlib/nn_conv.lua): conv1d, conv2d (with bias and 'same'/'valid' padding) and
-- conv3d, on tp.conv2d.
local conv = require "tapestry.nn_conv"
nn.conv1d, nn.conv2d, nn.conv3d = conv.conv1d, conv.conv2d, conv.conv3d

-- Scaled dot-product attention: softmax(q·kᵀ·scale + mask)·v, scale = 1/sqrt(d) by default.
-- q is {..., Lq, d}, k {..., Lk, d}, v {..., Lk, dv}; leading dims broadcast (heads, batch).
-- opts.mask: a bool tensor (true = may attend) or an additive float tensor broadcastable to
-- {..., Lq, Lk}; opts.causal: query i attends to keys 1..i (top-left aligned, as Torch);
-- opts.scale overrides 1/sqrt(d). Returns the output {..., Lq, dv} and the weights.
-- A query row with every key masked gives nan, as in Torch.
function nn.attention(q, k, v, opts)
  local fname = "tapestry.nn.attention"
  args.min_dims(fname, "q", q, 2)
  args.min_dims(fname, "k", k, 2)
  args.min_dims(fname, "v", v, 2)
  opts = args.opts(fname, opts, {"mask", "causal", "scale"})
  if q:size(-1) ~= k:size(-1) then
    args.fail(fname, "q and k must share the last dim: %s vs %s", shape_str(q.shape), shape_str(k.shape))
  end
  if k:size(-2) ~= v:size(-2) then
    args.fail(fname, "k and v must have as many keys (dim -2): %s vs %s", shape_str(k.shape),
              shape_str(v.shape))
  end
  local scale = opts.scale
  if scale == nil then
    scale = 1 / math.sqrt(q:size(-1))
  elseif type(scale) ~= "number" then
    args.fail(fname, "opts.scale must be a number, got %s", type(scale))
  end
  local scores = q:matmul(k:transpose(-2, -1)) * scale
  local mask = opts.mask
  if mask ~= nil then
    args.tensor(fname, "opts.mask", mask)
    if mask.dtype == "bool" then
      scores = tp.where(mask, scores, -math.huge)
    else
      scores = scores + mask
    end
  end
  if opts.causal then
    local lq, lk = q:size(-2), k:size(-2)
    local allowed = tp.arange(1, lk):unsqueeze(1):le(tp.arange(1, lq):unsqueeze(2))
    scores = tp.where(allowed, scores, -math.huge)
  end
  local weights = nn.softmax(scores, -1)
  return weights:matmul(v), weights
end

-- --- optimizers ------------------------------------------------------------------------
-- Parameters are named tensors: an optimizer step rebinds tp.env[name] to its new value (a
-- whole-tensor region write), computes every new value in one observation (tp.detach, which
-- also cuts the graph that produced them, so step k's graph is neither kept nor walked by
-- tp.grad at step k + 1), and binds nothing if that fails.

-- The names of params (named Tensors such as tp.env.w, or names), checked against grads.
local function param_names(fname, params, grads)
  if type(params) ~= "table" or args.is_tensor(params) then
    args.fail(fname, "params must be a sequence of named tensors (tp.env.w) or names, got %s", type(params))
  end
  if type(grads) ~= "table" or args.is_tensor(grads) or #grads ~= #params then
    args.fail(fname, "grads must be a sequence of %d tensors (one per param, as tp.grad returns), got %s",
              #params, type(grads) == "table" and #grads .. " entries" or type(grads))
  end
  local names = {}
  for i, p in ipairs(params) do
    local name = p
    if args.is_tensor(p) then name = p.name end
    if type(name) ~= "string" then
      args.fail(fname, "params[%d] must be a named tensor (tp.env.NAME) or a name, got %s", i,
                args.is_tensor(p) and "an unnamed Tensor" or type(p))
    end
    local cur = tp.env[name]
    if cur == nil then args.fail(fname, "params[%d]: tp.env.%s is not bound", i, name) end
    args.tensor(fname, "grads[" .. i .. "]", grads[i])
    if shape_str(grads[i].shape) ~= shape_str(cur.shape) then
      args.fail(fname, "grads[%d] has shape %s but tp.env.%s has %s", i, shape_str(grads[i].shape),
                name, shape_str(cur.shape))
    end
    names[i] = name
  end
  return names
end

-- Computes values (and the extra tensors of opts.eval) in one observation, then binds each
-- tp.env[keys[i]] to values[i] as a leaf.
local function commit(fname, keys, values, extra)
  if extra ~= nil and (type(extra) ~= "table" or args.is_tensor(extra)) then
    args.fail(fname, "opts.eval must be a sequence of tensors, got %s", type(extra))
  end
  local all = table.move(values, 1, #values, 1, {})
  for i, t in ipairs(extra or {}) do
    args.tensor(fname, "opts.eval[" .. i .. "]", t)
    all[#all + 1] = t
  end
  local leaves = {tp.detach(table.unpack(all))}
  for i, k in ipairs(keys) do tp.env[k] = leaves[i] end
end

-- p <- p - lr * g (with opts.momentum m > 0: v <- m v + g, p <- p - lr v, v in
-- tp.env.__sgd_v_NAME, as Torch's SGD without dampening).
function nn.sgd(params, grads, lr, opts)
  local fname = "tapestry.nn.sgd"
  local names = param_names(fname, params, grads)
  if type(lr) ~= "number" or not (lr > 0) then
    args.fail(fname, "lr must be a positive number, got %s", tostring(lr))
  end
  opts = args.opts(fname, opts, {"momentum", "eval"})
  local momentum = opts.momentum or 0
  if type(momentum) ~= "number" or not (momentum >= 0) then
    args.fail(fname, "opts.momentum must be a number >= 0, got %s", tostring(momentum))
  end
  local keys, values = {}, {}
  for i, name in ipairs(names) do
    local g = grads[i]
    if momentum > 0 then
      local vname = "__sgd_v_" .. name
      local v = tp.env[vname]
      g = v and v * momentum + g or g
      keys[#keys + 1], values[#values + 1] = vname, g
    end
    keys[#keys + 1], values[#values + 1] = name, tp.env[name] - g * lr
  end
  commit(fname, keys, values, opts.eval)
end

-- Adam (Kingma & Ba 2015) with bias correction; opts.weight_decay adds wd * p to g (Torch's
-- Adam, not AdamW). State per param NAME in the environment: __adam_m_NAME, __adam_v_NAME
-- (moments, the param's shape) and __adam_t_NAME (the step, a scalar).
function nn.adam(params, grads, opts)
  local fname = "tapestry.nn.adam"
  local names = param_names(fname, params, grads)
  opts = args.opts(fname, opts, {"lr", "beta1", "beta2", "eps", "weight_decay", "eval"})
  local lr = args.positive(fname, "opts.lr", opts.lr, 1e-3)
  local b1, b2 = opts.beta1 or 0.9, opts.beta2 or 0.999
  for _, kb in ipairs{{"beta1", b1}, {"beta2", b2}} do
    if type(kb[2]) ~= "number" or not (kb[2] >= 0 and kb[2] < 1) then
      args.fail(fname, "opts.%s must be a number in [0, 1), got %s", kb[1], tostring(kb[2]))
    end
  end
  local eps = args.positive(fname, "opts.eps", opts.eps, 1e-8)
  local wd = opts.weight_decay or 0
  if type(wd) ~= "number" or not (wd >= 0) then
    args.fail(fname, "opts.weight_decay must be a number >= 0, got %s", tostring(wd))
  end
  local keys, values = {}, {}
  local function put(k, v) keys[#keys + 1], values[#values + 1] = k, v end
  for i, name in ipairs(names) do
    local p, g = tp.env[name], grads[i]
    if wd > 0 then g = g + p * wd end
    local m, v, t = tp.env["__adam_m_" .. name], tp.env["__adam_v_" .. name], tp.env["__adam_t_" .. name]
    local step = t and math.tointeger(t:item()) + 1 or 1
    m = m and m * b1 + g * (1 - b1) or g * (1 - b1)
    v = v and v * b2 + g:square() * (1 - b2) or g:square() * (1 - b2)
    local mhat, vhat = m / (1 - b1 ^ step), v / (1 - b2 ^ step)
    put("__adam_m_" .. name, m)
    put("__adam_v_" .. name, v)
    put("__adam_t_" .. name, tp.tensor(step, {dtype = "i64"}))
    put(name, p - mhat / (vhat:sqrt() + eps) * lr)
  end
  commit(fname, keys, values, opts.eval)
end

return nn
