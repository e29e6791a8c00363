-- Finite-difference checks of tp.grad for the Lua tests (f64 and c128 throughout).
--   local gradcheck = require "gradcheck"
--   gradcheck.check("tanh", function(x) return x:tanh() end, {{2, 3}})
--   gradcheck.check("z*w", function(z, w) return z * w end, {{3}, {3}}, {complex = {true, false}})
-- f(x...) is reduced to sum(f(x...) * r) with a fixed random r (a complex result: sum(re(y) * r1
-- + im(y) * r2)); tp.grad of that is compared with (L(x + h e_i) - L(x - h e_i)) / 2h for every
-- element of every input. A complex input's parts are perturbed one at a time, and its gradient
-- must be torch's dL/d(re) + i dL/d(im).
local check = require "check"
local gradcheck = {}

local seed = 100

-- A flat Lua array of n values in [lo, hi), away from integers and half-integers (kinks).
local function values(n, lo, hi)
  seed = seed + 1
  local v = tp.rand({n}, {seed = seed, dtype = "f64"}):totable()
  for i = 1, n do
    local x = lo + (hi - lo) * v[i]
    local frac = x - math.floor(x)
    if math.abs(frac) < 0.03 or math.abs(frac - 0.5) < 0.03 or math.abs(frac - 1) < 0.03 then x = x + 0.1 end
    v[i] = x
  end
  return v
end
gradcheck.values = values

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

-- A leaf: a reshape node as a param could be bypassed (reshape(reshape(y)) is reshape(y)).
-- A complex one (c128) takes its real parts, then its imaginary parts, from flat.
local function tensor(flat, shape, complex)
  if not complex then return tp.detach(tp.tensor(flat, {dtype = "f64"}):reshape(shape)) end
  local n = #flat // 2
  local re = tp.tensor(table.move(flat, 1, n, 1, {}), {dtype = "f64"})
  local im = tp.tensor(table.move(flat, n + 1, 2 * n, 1, {}), {dtype = "f64"})
  return tp.detach(tp.complex(re, im):reshape(shape))
end
gradcheck.tensor = tensor

local function flatten(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t return out end
  for _, x in ipairs(t) do flatten(x, out) end
  return out
end
gradcheck.flatten = flatten

-- The values of a tensor as one flat array (a complex one: its real parts, then its imaginary).
local function values_of(x)
  if x.dtype ~= "c64" and x.dtype ~= "c128" then return flatten(x:totable()) end
  local v = flatten(x:real():totable())
  return flatten(x:imag():totable(), v)
end
gradcheck.values_of = values_of

-- opts.lo/hi: the input range (default -2, 2); opts.h (1e-6); opts.tol (1e-5);
-- opts.inputs: fixed flat inputs instead of random ones (a complex input: re..., im...);
-- opts.complex: true, or a table of booleans per input: which inputs are c128.
function gradcheck.check(name, f, shapes, opts)
  opts = opts or {}
  local lo, hi, h, tol = opts.lo or -2, opts.hi or 2, opts.h or 1e-6, opts.tol or 1e-5
  local cplx = {}
  for i = 1, #shapes do cplx[i] = opts.complex == true or (type(opts.complex) == "table" and opts.complex[i]) end
  local flat = {}
  for i, s in ipairs(shapes) do
    flat[i] = opts.inputs and opts.inputs[i] or values(numel(s) * (cplx[i] and 2 or 1), lo, hi)
  end
  local function build(fl)
    local xs = {}
    for i, s in ipairs(shapes) do xs[i] = tensor(fl[i], s, cplx[i]) end
    return xs
  end
  local xs = build(flat)
  local y = f(table.unpack(xs))
  local r = tensor(values(y:numel(), -1, 1), y.shape)
  local loss
  if y.dtype == "c64" or y.dtype == "c128" then
    local r2 = tensor(values(y:numel(), -1, 1), y.shape)
    loss = function(ins)
      local v = f(table.unpack(ins)):cast("c128")
      return (v:real() * r + v:imag() * r2):sum()
    end
  else
    loss = function(ins) return (f(table.unpack(ins)):cast("f64") * r):sum() end
  end
  local gs = tp.grad(loss(xs), xs)
  for i, s in ipairs(shapes) do
    check.eq(gs[i].shape, s, name .. ": shape of grad " .. i)
    check.eq(gs[i].dtype, cplx[i] and "c128" or "f64", name .. ": dtype of grad " .. i)
    local g = values_of(gs[i])
    for j = 1, #flat[i] do
      local function at(dx)
        local fl = {}
        for k, v in ipairs(flat) do fl[k] = table.move(v, 1, #v, 1, {}) end
        fl[i][j] = fl[i][j] + dx
        return loss(build(fl)):item()
      end
      local fd = (at(h) - at(-h)) / (2 * h)
      check.near(g[j], fd, tol, string.format("%s: d/dx%d[%d]", name, i, j))
    end
  end
end

return gradcheck
