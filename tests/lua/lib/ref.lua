-- A naive reference of Tapestry's ops in pure Lua, for small inputs only.
-- A value is {dtype=, shape=, data=} with data flat, row-major, 1-based;
-- bools are Lua booleans, ints Lua integers, floats Lua floats (f32 rounded).
--   local r = ref.of(x)                  -- from a tp Tensor
--   check.same(x + 1, ref.binary("add", r, 1))
local ref = {}

-- --- dtypes (numpy 2 / NEP 50) ---------------------------------------------------
local ORDER = {bool = 1, i32 = 2, i64 = 3, f32 = 4, f64 = 5}
local FLOAT = {f32 = true, f64 = true}
local INT = {i32 = true, i64 = true}
ref.dtypes = {"f32", "f64", "i32", "i64", "bool"}
ref.is_float = function(t) return FLOAT[t] == true end
ref.is_int = function(t) return INT[t] == true end

function ref.promote(a, b)
  if a == b then return a end
  if ORDER[a] > ORDER[b] then a, b = b, a end
  if INT[a] and b == "f32" then return "f64" end
  return b
end

-- The dtype when a Lua value v meets a tensor of dtype t (v is "weak").
function ref.weak(t, v)
  if type(v) == "boolean" then return t end
  if math.type(v) == "integer" then return t == "bool" and "i64" or t end
  return FLOAT[t] and t or "f64"
end

function ref.float_result(t)
  if FLOAT[t] then return t end
  return t == "bool" and "f32" or "f64"
end

function ref.round_f32(x) return (string.unpack("f", string.pack("f", x))) end

-- v converted to dtype t, as a cast does (float to int truncates toward zero).
function ref.convert(v, t)
  if t == "bool" then
    if type(v) == "boolean" then return v end
    return v ~= 0
  end
  if type(v) == "boolean" then v = v and 1 or 0 end
  if t == "f64" then return v + 0.0 end
  if t == "f32" then return ref.round_f32(v + 0.0) end
  local i = math.tointeger(v)
  if not i then i = math.tointeger(v >= 0 and math.floor(v) or math.ceil(v)) end
  assert(i, "ref.convert: no integer for " .. tostring(v))
  if t == "i32" then i = ((i + 0x80000000) & 0xFFFFFFFF) - 0x80000000 end
  return i
end

local function num(v) if type(v) == "boolean" then return v and 1 or 0 end return v end

-- --- shapes ------------------------------------------------------------------------
local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end
ref.numel = numel

local function copy(t) return table.move(t, 1, #t, 1, {}) end

-- flat 1-based position <-> 1-based index table
local function unravel(p, shape)
  local idx, rest = {}, p - 1
  for d = #shape, 1, -1 do
    idx[d] = rest % shape[d] + 1
    rest = rest // shape[d]
  end
  return idx
end
local function ravel(idx, shape)
  local p = 0
  for d = 1, #shape do p = p * shape[d] + (idx[d] - 1) end
  return p + 1
end

local function norm_dim(d, rank) if d < 0 then d = d + rank + 1 end return d end

function ref.broadcast_shapes(a, b)
  local r = math.max(#a, #b)
  local out = {}
  for i = 1, r do
    local da = a[i - (r - #a)] or 1
    local db = b[i - (r - #b)] or 1
    assert(da == db or da == 1 or db == 1, "ref: shapes cannot be broadcast")
    out[i] = da == 1 and db or da
  end
  return out
end

-- The element of x at output index idx under broadcasting.
local function at(x, idx)
  if type(x) ~= "table" then return x end
  local r, off, s = #x.shape, #idx - #x.shape, {}
  for d = 1, r do s[d] = x.shape[d] == 1 and 1 or idx[d + off] end
  return x.data[ravel(s, x.shape)]
end

-- A new value whose element at idx is f(idx).
local function build(dtype, shape, f)
  local data = {}
  for p = 1, numel(shape) do data[p] = ref.convert(f(unravel(p, shape)), dtype) end
  return {dtype = dtype, shape = copy(shape), data = data}
end

-- --- construction ------------------------------------------------------------------
function ref.new(dtype, shape, data) return {dtype = dtype, shape = shape, data = data} end

-- From a nested Lua table (or a number: a scalar); dtype defaults as tp.tensor.
function ref.tensor(t, dtype)
  local shape, v = {}, t
  while type(v) == "table" do shape[#shape + 1] = #v; v = v[1] end
  dtype = dtype or (type(v) == "boolean" and "bool" or "f32")
  local data = {}
  local function walk(x)
    if type(x) == "table" then for _, y in ipairs(x) do walk(y) end
    else data[#data + 1] = ref.convert(x, dtype) end
  end
  walk(t)
  return {dtype = dtype, shape = shape, data = data}
end

-- The observed value of a tp Tensor.
function ref.of(x)
  local shape = x.shape
  if #shape == 0 then return {dtype = x.dtype, shape = {}, data = {x:item()}} end
  local r = ref.tensor(x:totable(), x.dtype)
  return r
end

function ref.totable(r)
  if #r.shape == 0 then return r.data[1] end
  local p = 0
  local function nest(d)
    local t = {}
    for i = 1, r.shape[d] do
      if d == #r.shape then p = p + 1; t[i] = r.data[p] else t[i] = nest(d + 1) end
    end
    return t
  end
  return nest(1)
end

function ref.full(shape, v, dtype) return build(dtype, shape, function() return v end) end

function ref.arange(first, last, step, dtype)
  step = step or 1
  local data = {}
  for v = first, last, step do data[#data + 1] = ref.convert(v, dtype) end
  return {dtype = dtype, shape = {#data}, data = data}
end

-- --- elementwise -------------------------------------------------------------------
local function erf(x)  -- Taylor series: accurate to ~1e-14 for |x| < 3
  local sum, term, n = 0, x, 0
  repeat
    local t = term / (2 * n + 1)
    sum = sum + t
    n = n + 1
    term = -term * x * x / n
  until math.abs(t) < 1e-17 * math.max(math.abs(sum), 1e-300) or n > 200
  return 2 / math.sqrt(math.pi) * sum
end
ref.erf = erf

local function tanh(x)
  local e = math.exp(-2 * math.abs(x))
  local t = (1 - e) / (1 + e)
  return x < 0 and -t or t
end

local function round_even(x)
  if x ~= x or x == math.huge or x == -math.huge then return x end
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return f + 0.0
end

local function sign(x)
  if x ~= x then return x end
  return x > 0 and 1 or (x < 0 and -1 or 0)
end

local UNARY = {
  abs = math.abs, neg = function(x) return -x end, exp = math.exp, log = math.log,
  sqrt = math.sqrt, rsqrt = function(x) return 1 / math.sqrt(x) end, sin = math.sin,
  cos = math.cos, tanh = tanh, sigmoid = function(x) return 1 / (1 + math.exp(-x)) end,
  relu = function(x) return x > 0 and x or 0 end,
  gelu = function(x) return 0.5 * x * (1 + erf(x / math.sqrt(2))) end,
  floor = math.floor, ceil = math.ceil, round = round_even, sign = sign,
  square = function(x) return x * x end, reciprocal = function(x) return 1 / x end,
}
ref.unary_names = {"abs", "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
  "sigmoid", "relu", "gelu", "floor", "ceil", "round", "sign", "square", "reciprocal"}

-- The result dtype of a unary op on dtype t (nil: an error).
function ref.unary_dtype(name, t)
  if name == "neg" then return t ~= "bool" and t or nil end
  if name == "logical_not" then return "bool" end
  if name == "abs" or name == "relu" or name == "square" or name == "sign"
    or name == "floor" or name == "ceil" or name == "round" then return t end
  return ref.float_result(t)
end

function ref.unary(name, a)
  local out = assert(ref.unary_dtype(name, a.dtype), "ref: no " .. name .. " for " .. a.dtype)
  if name == "logical_not" then
    return build(out, a.shape, function(i) return not ref.convert(at(a, i), "bool") end)
  end
  if a.dtype == "bool" and out == "bool" then  -- abs, relu, square of a bool: the identity
    return build(out, a.shape, function(i) return at(a, i) end)
  end
  if INT[a.dtype] and (name == "floor" or name == "ceil" or name == "round") then
    return build(out, a.shape, function(i) return at(a, i) end)
  end
  local f = UNARY[name]
  return build(out, a.shape, function(i) return f(ref.convert(at(a, i), out)) end)
end

local function ipow(a, b)
  local r = 1
  for _ = 1, b do r = r * a end
  return r
end

-- f(a, b, t) computes in dtype t (values already converted); returns a Lua value.
local BINARY = {
  add = function(a, b, t) if t == "bool" then return a or b end return a + b end,
  sub = function(a, b) return a - b end,
  mul = function(a, b, t) if t == "bool" then return a and b end return a * b end,
  div = function(a, b) return a / b end,
  floordiv = function(a, b, t)
    if INT[t] then return b == 0 and 0 or a // b end
    return math.floor(a / b)
  end,
  mod = function(a, b, t)
    if INT[t] and b == 0 then return 0 end
    return a % b
  end,
  pow = function(a, b, t) if INT[t] then return ipow(a, b) end return a ^ b end,
  maximum = function(a, b, t)
    if t == "bool" then return a or b end
    if a ~= a or b ~= b then return 0 / 0 end
    return math.max(a, b)
  end,
  minimum = function(a, b, t)
    if t == "bool" then return a and b end
    if a ~= a or b ~= b then return 0 / 0 end
    return math.min(a, b)
  end,
  atan2 = function(a, b) return math.atan(a, b) end,
  eq = function(a, b) return a == b end, ne = function(a, b) return a ~= b end,
  lt = function(a, b) return num(a) < num(b) end, le = function(a, b) return num(a) <= num(b) end,
  gt = function(a, b) return num(a) > num(b) end, ge = function(a, b) return num(a) >= num(b) end,
  logical_and = function(a, b) return a and b end,
  logical_or = function(a, b) return a or b end,
}
local COMPARE = {eq = true, ne = true, lt = true, le = true, gt = true, ge = true}

-- The common dtype of operands (ref values strong, Lua values weak).
function ref.common(...)
  local strong
  for _, o in ipairs({...}) do
    if type(o) == "table" then strong = strong and ref.promote(strong, o.dtype) or o.dtype end
  end
  if not strong then
    local t = "bool"
    for _, o in ipairs({...}) do
      local k = type(o) == "boolean" and "bool" or (math.type(o) == "integer" and "i64" or "f32")
      t = ref.promote(t, k)
    end
    return t
  end
  for _, o in ipairs({...}) do
    if type(o) ~= "table" then strong = ref.weak(strong, o) end
  end
  return strong
end

-- (compute dtype, result dtype) of a binary op; nil for a type error.
function ref.binary_dtypes(name, a, b)
  local t = ref.common(a, b)
  if name == "sub" and t == "bool" then return nil end
  if name == "div" or name == "atan2" then t = ref.float_result(t); return t, t end
  if (name == "floordiv" or name == "mod" or name == "pow") and t == "bool" then return "i64", "i64" end
  if COMPARE[name] then return t, "bool" end
  if name == "logical_and" or name == "logical_or" then return "bool", "bool" end
  return t, t
end

local function shape_of(x) return type(x) == "table" and x.shape or {} end

function ref.binary(name, a, b)
  local t, out = ref.binary_dtypes(name, a, b)
  assert(t, "ref: " .. name .. " is a type error here")
  local f = BINARY[name]
  local shape = ref.broadcast_shapes(shape_of(a), shape_of(b))
  return build(out, shape, function(i)
    return f(ref.convert(at(a, i), t), ref.convert(at(b, i), t), t)
  end)
end

function ref.where(c, a, b)
  local t = ref.common(a, b)
  local shape = ref.broadcast_shapes(ref.broadcast_shapes(shape_of(c), shape_of(a)), shape_of(b))
  return build(t, shape, function(i)
    if ref.convert(at(c, i), "bool") then return ref.convert(at(a, i), t) end
    return ref.convert(at(b, i), t)
  end)
end

function ref.cast(a, t) return build(t, a.shape, function(i) return at(a, i) end) end

function ref.clamp(a, lo, hi)
  local y = a
  if lo ~= nil then y = ref.binary("maximum", y, lo) end
  if hi ~= nil then y = ref.binary("minimum", y, hi) end
  return y
end

-- --- reductions --------------------------------------------------------------------
local function dim_set(dims, rank)
  local set = {}
  if dims == nil then for d = 1, rank do set[d] = true end return set end
  if type(dims) == "number" then dims = {dims} end
  for _, d in ipairs(dims) do set[norm_dim(d, rank)] = true end
  return set
end

-- Groups the elements of a by their index outside `set`, in row-major order.
local function groups(a, set, keepdim)
  local oshape, kshape = {}, {}
  for d = 1, #a.shape do
    kshape[d] = set[d] and 1 or a.shape[d]
    if not set[d] then oshape[#oshape + 1] = a.shape[d] end
  end
  local gs = {}
  for p = 1, numel(kshape) do gs[p] = {} end
  for p = 1, #a.data do
    local idx = unravel(p, a.shape)
    for d in pairs(set) do idx[d] = 1 end
    local g = gs[ravel(idx, kshape)]
    g[#g + 1] = a.data[p]
  end
  return gs, keepdim and kshape or oshape
end

local function fold(vs, init, f)
  local acc = init
  for _, v in ipairs(vs) do acc = f(acc, v) end
  return acc
end

local function mean(vs)
  return fold(vs, 0.0, function(s, v) return s + num(v) end) / #vs
end

local function variance(vs, correction)
  local m = mean(vs)
  return fold(vs, 0.0, function(s, v) return s + (num(v) - m) ^ 2 end) / (#vs - correction)
end

local function extreme(vs, better)
  local best = num(vs[1])
  for _, v in ipairs(vs) do
    v = num(v)
    if v ~= v then return v end
    if better(v, best) then best = v end
  end
  return best
end

local function arg_extreme(vs, better)
  local best, bi = num(vs[1]), 1
  for i, v in ipairs(vs) do
    if better(num(v), best) then best, bi = num(v), i end
  end
  return bi
end

-- The result dtype of a reduction of dtype t.
function ref.reduce_dtype(name, t)
  if name == "sum" or name == "prod" then return FLOAT[t] and t or "i64" end
  if name == "all" or name == "any" then return "bool" end
  if name == "argmax" or name == "argmin" then return "i64" end
  if name == "max" or name == "min" then return t end
  return ref.float_result(t)  -- mean var std norm
end

-- name(a, dims [,opts]) as x:name(dims, opts): dims nil (all), a number or a list.
function ref.reduce(name, a, dims, opts)
  opts = opts or {}
  local out = ref.reduce_dtype(name, a.dtype)
  local set = dim_set(dims, #a.shape)
  local gs, shape = groups(a, set, opts.keepdim)
  local lt = function(x, y) return x < y end
  local gt = function(x, y) return x > y end
  local f = ({
    sum = function(vs) return fold(vs, FLOAT[out] and 0.0 or 0, function(s, v) return s + num(v) end) end,
    prod = function(vs) return fold(vs, FLOAT[out] and 1.0 or 1, function(s, v) return s * num(v) end) end,
    max = function(vs) return extreme(vs, gt) end,
    min = function(vs) return extreme(vs, lt) end,
    all = function(vs) return fold(vs, true, function(s, v) return s and ref.convert(v, "bool") end) end,
    any = function(vs) return fold(vs, false, function(s, v) return s or ref.convert(v, "bool") end) end,
    mean = mean,
    var = function(vs) return variance(vs, opts.correction or 0) end,
    std = function(vs) return math.sqrt(variance(vs, opts.correction or 0)) end,
    norm = function(vs) return math.sqrt(fold(vs, 0.0, function(s, v) return s + num(v) ^ 2 end)) end,
    argmax = function(vs) return arg_extreme(vs, gt) end,
    argmin = function(vs) return arg_extreme(vs, lt) end,
  })[name]
  assert(f, "ref: no reduction " .. name)
  local data = {}
  for p, g in ipairs(gs) do data[p] = ref.convert(f(g), out) end
  if (name == "max" or name == "min") and out == "bool" then
    for p, g in ipairs(gs) do
      data[p] = name == "max" and fold(g, false, function(s, v) return s or v end)
                              or fold(g, true, function(s, v) return s and v end)
    end
  end
  return {dtype = out, shape = shape, data = data}
end

-- --- matmul ------------------------------------------------------------------------
function ref.matmul(a, b)
  local t = ref.promote(a.dtype, b.dtype)
  a, b = ref.cast(a, t), ref.cast(b, t)
  local av, bv = #a.shape == 1, #b.shape == 1
  if av then a = ref.unsqueeze(a, 1) end
  if bv then b = ref.unsqueeze(b, 2) end
  local ra, rb = #a.shape, #b.shape
  local n, k, m = a.shape[ra - 1], a.shape[ra], b.shape[rb]
  assert(k == b.shape[rb - 1], "ref.matmul: inner dimensions differ")
  local batch = ref.broadcast_shapes(table.move(a.shape, 1, ra - 2, 1, {}),
                                     table.move(b.shape, 1, rb - 2, 1, {}))
  local shape = copy(batch)
  shape[#shape + 1] = n
  shape[#shape + 1] = m
  local r = build(t, shape, function(idx)
    local ia, ib = copy(idx), copy(idx)
    local acc = FLOAT[t] and 0.0 or 0
    if t == "bool" then acc = false end
    for kk = 1, k do
      ia[#ia] = kk
      ib[#ib - 1] = kk
      local x, y = at(a, ia), at(b, ib)
      if t == "bool" then acc = acc or (x and y) else acc = acc + x * y end
    end
    return acc
  end)
  if av then r = ref.squeeze(r, -2) end
  if bv then r = ref.squeeze(r, -1) end
  return r
end

-- --- shape -------------------------------------------------------------------------
function ref.reshape(a, shape)
  shape = copy(shape)
  local known, infer = 1, nil
  for i, d in ipairs(shape) do if d == -1 then infer = i else known = known * d end end
  if infer then shape[infer] = #a.data // known end
  assert(numel(shape) == #a.data, "ref.reshape: wrong numel")
  return {dtype = a.dtype, shape = shape, data = copy(a.data)}
end

function ref.permute(a, perm)
  local shape = {}
  for i, p in ipairs(perm) do shape[i] = a.shape[norm_dim(p, #a.shape)] end
  return build(a.dtype, shape, function(idx)
    local src = {}
    for i, p in ipairs(perm) do src[norm_dim(p, #a.shape)] = idx[i] end
    return a.data[ravel(src, a.shape)]
  end)
end

function ref.transpose(a, d1, d2)
  local perm = {}
  for d = 1, #a.shape do perm[d] = d end
  d1, d2 = norm_dim(d1, #a.shape), norm_dim(d2, #a.shape)
  perm[d1], perm[d2] = perm[d2], perm[d1]
  return ref.permute(a, perm)
end

function ref.expand(a, shape)
  shape = copy(shape)
  for i, d in ipairs(shape) do
    if d == -1 then shape[i] = a.shape[i - (#shape - #a.shape)] end
  end
  return build(a.dtype, shape, function(idx) return at(a, idx) end)
end

function ref.squeeze(a, d)
  local shape = {}
  if d then d = norm_dim(d, #a.shape) end
  for i, s in ipairs(a.shape) do
    if not (s == 1 and (d == nil or d == i)) then shape[#shape + 1] = s end
  end
  return {dtype = a.dtype, shape = shape, data = copy(a.data)}
end

function ref.unsqueeze(a, d)
  if d < 0 then d = d + #a.shape + 2 end
  local shape = copy(a.shape)
  table.insert(shape, d, 1)
  return {dtype = a.dtype, shape = shape, data = copy(a.data)}
end

function ref.flatten(a) return ref.reshape(a, {#a.data}) end

function ref.cat(list, d)
  local t = list[1].dtype
  for _, x in ipairs(list) do t = ref.promote(t, x.dtype) end
  d = norm_dim(d, #list[1].shape)
  local shape = copy(list[1].shape)
  shape[d] = 0
  local starts = {}
  for i, x in ipairs(list) do starts[i] = shape[d]; shape[d] = shape[d] + x.shape[d] end
  return build(t, shape, function(idx)
    for i = #list, 1, -1 do
      if idx[d] > starts[i] then
        local src = copy(idx)
        src[d] = idx[d] - starts[i]
        return list[i].data[ravel(src, list[i].shape)]
      end
    end
  end)
end

function ref.stack(list, d)
  if d < 0 then d = d + #list[1].shape + 2 end
  local us = {}
  for i, x in ipairs(list) do us[i] = ref.unsqueeze(x, d) end
  return ref.cat(us, d)
end

-- x[spec]: {} whole dim, {a,b[,step]} inclusive, {a} to the end, a number selects.
function ref.index(a, spec)
  local starts, steps, counts, keep = {}, {}, {}, {}
  for d = 1, #a.shape do
    local e, n = spec[d], a.shape[d]
    local function pos(i) return i < 0 and i + n + 1 or i end
    if e == nil or (type(e) == "table" and #e == 0) then
      starts[d], steps[d], counts[d], keep[d] = 1, 1, n, true
    elseif type(e) == "number" then
      starts[d], steps[d], counts[d], keep[d] = pos(e), 1, 1, false
    else
      local first, last, step = pos(e[1]), e[2] and pos(e[2]) or n, e[3] or 1
      starts[d], steps[d], counts[d], keep[d] = first, step, (last - first) // step + 1, true
    end
  end
  local shape = {}
  for d = 1, #a.shape do if keep[d] then shape[#shape + 1] = counts[d] end end
  return build(a.dtype, shape, function(idx)
    local src, j = {}, 0
    for d = 1, #a.shape do
      local i = 1
      if keep[d] then j = j + 1; i = idx[j] end
      src[d] = starts[d] + (i - 1) * steps[d]
    end
    return a.data[ravel(src, a.shape)]
  end)
end

function ref.narrow(a, d, first, len)
  d = norm_dim(d, #a.shape)
  if first < 0 then first = first + a.shape[d] + 1 end
  local spec = {}
  spec[d] = {first, first + len - 1}
  return ref.index(a, spec)
end

function ref.select(a, d, i)
  d = norm_dim(d, #a.shape)
  local spec = {}
  for k = 1, d - 1 do spec[k] = {} end
  spec[d] = i
  return ref.index(a, spec)
end

return ref
