-- Finite-difference checks of tp.grad for the Lua tests (f64 throughout).
--   local gradcheck = require "gradcheck"
--   gradcheck.check("tanh", function(x) return x:tanh() end, {{2, 3}})
-- f(x...) is reduced to sum(f(x...) * r) with a fixed random r; tp.grad of that is compared with
-- (L(x + h e_i) - L(x - h e_i)) / 2h for every element of every input.
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
local function tensor(flat, shape)
  return tp.detach(tp.tensor(flat, {dtype = "f64"}):reshape(shape))
end

local function flatten(t, out)
  out = out or {}
  if type(t) ~= "table" then out[#out + 1] = t return out end
  for _, x in ipairs(t) do flatten(x, out) end
  return out
end
gradcheck.flatten = flatten

-- opts.lo/hi: the input range (default -2, 2); opts.h (1e-6); opts.tol (1e-5);
-- opts.inputs: fixed flat inputs instead of random ones.
function gradcheck.check(name, f, shapes, opts)
  opts = opts or {}
  local lo, hi, h, tol = opts.lo or -2, opts.hi or 2, opts.h or 1e-6, opts.tol or 1e-5
  local flat = {}
  for i, s in ipairs(shapes) do
    flat[i] = opts.inputs and opts.inputs[i] or values(numel(s), lo, hi)
  end
  local function build(fl)
    local xs = {}
    for i, s in ipairs(shapes) do xs[i] = tensor(fl[i], s) end
    return xs
  end
  local xs = build(flat)
  local y = f(table.unpack(xs))
  local r = tensor(values(y:numel(), -1, 1), y.shape)
  local function loss(ins) return (f(table.unpack(ins)):cast("f64") * r):sum() end
  local gs = tp.grad(loss(xs), xs)
  for i, s in ipairs(shapes) do
    check.eq(gs[i].shape, s, name .. ": shape of grad " .. i)
    check.eq(gs[i].dtype, "f64", name .. ": dtype of grad " .. i)
    local g = flatten(gs[i]:totable())
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
