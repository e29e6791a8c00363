-- Small deterministic inputs as a (tp Tensor, reference value) pair, from a
-- Lua generator independent of tp.rand.
--   local x, rx = gen.pair({3, 4}, "i32", 7)          -- ints in [-9, 9]
--   local y, ry = gen.pair({5}, "f32", 1, 0.5, 4)      -- floats in [0.5, 4)
local ref = require "ref"

local gen = {}

local function uniform(seed)
  local s = seed * 7919 + 1
  return function()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  end
end

-- A nested Lua table of the given shape; `lo`, `hi` bound the values, and
-- opts.nonzero avoids zeros, opts.whole gives whole floats (for ties).
function gen.values(shape, dtype, seed, lo, hi, opts)
  opts = opts or {}
  local u = uniform(seed)
  local int = dtype == "i32" or dtype == "i64" or opts.whole
  lo = lo or (int and -9 or -5)
  hi = hi or (int and 9 or 5)
  if int then lo, hi = math.ceil(lo), math.floor(hi) end
  local function one()
    if dtype == "bool" then return u() < 0.5 end
    local v
    repeat
      if int then v = lo + math.floor(u() * (hi - lo + 1)) else v = lo + u() * (hi - lo) end
    until not (opts.nonzero and v == 0)
    if opts.whole and not (dtype == "i32" or dtype == "i64") then v = v + 0.0 end
    return v
  end
  local function fill(d)
    if d > #shape then return one() end
    local t = {}
    for i = 1, shape[d] do t[i] = fill(d + 1) end
    return t
  end
  return fill(1)
end

function gen.pair(shape, dtype, seed, lo, hi, opts)
  local t = gen.values(shape, dtype, seed, lo, hi, opts)
  return tp.tensor(t, {dtype = dtype}), ref.tensor(t, dtype)
end

return gen
