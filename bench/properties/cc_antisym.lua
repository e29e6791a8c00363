-- A coupled-cluster-style contraction (issue 25): c = einsum("abij,ijcd->abcd", a, b) with a and
-- b antisymmetric in (a,b), (i,j) and (c,d), f32, each n^4. Declared and kept packed, the pair
-- (i,j) is summed over its stored tiles (off-diagonal ones twice) and only the stored tiles of
-- the output pairs (a,b) and (c,d) are computed, in one einsum of the packed operands; the same
-- contraction of the dense tensors is the baseline (bench/properties/properties_numpy.py is
-- numpy's). Prints planned flops, bytes held and the median time of each.
--   tapestry bench/properties/cc_antisym.lua [n=32] [reps=5]    (docs/properties.md has results)
local n, reps = tonumber(arg[1]) or 32, tonumber(arg[2]) or 5
local function antisymmetric(seed)
  local x = tp.randn({n, n, n, n}, {seed = seed})
  x = x - x:permute{2, 1, 3, 4}
  return x - x:permute{1, 2, 4, 3}
end
local groups = {tp.antisymmetric{1, 2}, tp.antisymmetric{3, 4}}
tp.env.a = antisymmetric(1):declare{symmetry = groups, trust = true}
tp.env.b = antisymmetric(2):declare{symmetry = groups, trust = true}
local ad, bd = tp.eval(tp.env.a:dense(), tp.env.b:dense())
local a, b = tp.eval(tp.env.a, tp.env.b)

local spec = "abij,ijcd->abcd"
local ps, pd = tp.plan(tp.einsum(spec, a, b)):cost(), tp.plan(tp.einsum(spec, ad, bd)):cost()
local err = (tp.einsum(spec, a, b) - tp.einsum(spec, ad, bd)):abs():max():item()
local scale = tp.einsum(spec, ad, bd):abs():max():item()
-- b is scaled differently every run: a new node each time, never a cached value (a scaled
-- packed tensor stays packed: the map runs on its stored tiles).
local function median(x, y)
  local ts = {}
  for r = 0, reps do
    local c0 = tp.clock()
    tp.eval(tp.einsum(spec, x, y * (1 + r / 1000)))
    if r > 0 then ts[#ts + 1] = tp.clock() - c0 end
  end
  table.sort(ts)
  return ts[(#ts + 1) // 2]
end
-- Kept packed: bound to a name, the result is computed as its stored tiles only (the unpack
-- is what reading it back costs); any observation computes a pending binding.
local function median_kept(x, y)
  local ts = {}
  for r = 0, reps do
    local c0 = tp.clock()
    tp.env.c = tp.einsum(spec, x, y * (1 + r / 1000))
    tp.eval(tp.tensor(0))
    if r > 0 then ts[#ts + 1] = tp.clock() - c0 end
  end
  table.sort(ts)
  return ts[(#ts + 1) // 2]
end
local ts, tk, td = median(a, b), median_kept(a, b), median(ad, bd)
local held = 0
for _, t in ipairs(tp.tensors()) do if t.name == "a" then held = t.bytes end end
print(string.format("n=%d: planned flops %.3g packed / %.3g dense = %.3f", n, ps.flops, pd.flops, ps.flops / pd.flops))
print(string.format("bytes held per operand %d packed / %d dense = %.3f", held, n ^ 4 * 4, held / (n ^ 4 * 4)))
print(string.format("time %.4f s packed (%.4f s kept packed) / %.4f s dense = %.3f (%.3f) (max |difference| %.3g of %.3g)",
                    ts, tk, td, ts / td, tk / td, err, scale))
