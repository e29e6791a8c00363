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

-- Mean cross-entropy of a batch of logits {N, C} against labels, via log_softmax (stable).
-- labels: 1-based class indices (an integer tensor {N} or a Lua sequence), or per-class
-- targets of logits' shape (one-hot or probabilities, float or bool). An index outside 1..C
-- in an integer tensor makes the loss nan (it cannot be checked without computing it).
function nn.cross_entropy(logits, labels)
  local fname = "tapestry.nn.cross_entropy"
  args.dims(fname, "logits", logits, 2)
  local n, c = logits:size(1), logits:size(2)
  if type(labels) == "table" then labels = labels_from_table(fname, labels, n, c) end
  args.tensor(fname, "labels", labels)
  local logp = nn.log_softmax(logits, 2)
  local is_int = labels.dtype == "i32" or labels.dtype == "i64"
  if is_int and labels:dim() == 1 then
    if labels:size(1) ~= n then
      args.fail(fname, "labels %s does not match the batch of logits %s", shape_str(labels.shape),
                shape_str(logits.shape))
    end
    -- No gather op: the one-hot mask is labels (as a column) == 1..C (as a row).
    local onehot = labels:unsqueeze(2):eq(tp.arange(1, c, {dtype = labels.dtype}))
    local picked = tp.where(onehot, logp, 0):sum(2)
    local valid = tp.logical_and(labels:ge(1), labels:le(c))
    return tp.where(valid, -picked, 0 / 0):mean()
  end
  if labels:dim() ~= 2 or labels:size(1) ~= n or labels:size(2) ~= c then
    args.fail(fname, "labels must be class indices {%d} (i32/i64) or targets of logits' shape %s, got %s %s",
              n, shape_str(logits.shape), labels.dtype, shape_str(labels.shape))
  end
  if labels.dtype == "bool" then
    return -tp.where(labels, logp, 0):sum(2):mean()  -- where, so a masked -inf never meets 0
  end
  return -(labels * logp):sum(2):mean()
end

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
