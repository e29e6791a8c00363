-- Reductions over some dims of packed tensors (docs/properties.md, "Reductions"): sum, mean,
-- max and min read the stored tiles only and equal the same reduction of x:dense(), for
-- symmetric, antisymmetric and block-sparse tensors, edge tiles padded or not.
-- Runs on 1 rank, 3 virtual ranks (plans verified), a simulated device and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, near, truthy = check.test, check.eq, check.near, check.truthy

local function all_near(cases)
  local ds = {}
  for i, c in ipairs(cases) do ds[i] = (c[1] - c[2]):abs():max() end
  tp.eval(table.unpack(ds))
  for i, c in ipairs(cases) do near(ds[i]:item(), 0, c[3], c[4]) end
end
local function held(name)
  for _, t in ipairs(tp.tensors()) do if t.name == name then return t end end
end
-- Every reduction of `ops` over every dim set of `dims_list`, packed vs dense.
local function compare(x, d, dims_list, tol, label)
  local cases = {}
  for _, dims in ipairs(dims_list) do
    local name = label .. " over {" .. table.concat(dims, ",") .. "}"
    cases[#cases + 1] = {x:sum(dims), d:sum(dims), tol, "sum " .. name}
    cases[#cases + 1] = {x:mean(dims, {keepdim = true}), d:mean(dims, {keepdim = true}), tol, "mean " .. name}
    cases[#cases + 1] = {x:max(dims), d:max(dims), 0, "max " .. name}
    cases[#cases + 1] = {x:min(dims), d:min(dims), 0, "min " .. name}
  end
  all_near(cases)
end

test("symmetric and antisymmetric pairs, padded edge tiles", function()
  for _, n in ipairs{37} do
    tp.env.s = tp.randn({n, n}, {dtype = "f64", symmetry = tp.symmetric{1, 2}, seed = n})
    local a = tp.randn({n, n}, {dtype = "f64", symmetry = tp.antisymmetric{1, 2}, seed = n + 1})
    tp.env.a = a
    truthy(held("s").packed and held("a").packed)
    compare(tp.env.s, tp.env.s:dense(), {{1}, {2}}, 1e-10, "symmetric " .. n)
    compare(tp.env.a, tp.env.a:dense(), {{1}, {2}}, 1e-10, "antisymmetric " .. n)
  end
  tp.env.s, tp.env.a = nil, nil
end)

test("groups of a 4-D tensor: reduced whole, or left packed in the result", function()
  local x = tp.randn({6, 6, 5, 5}, {dtype = "f64", seed = 3})
  x = x - x:permute{2, 1, 3, 4}
  x = x + x:permute{1, 2, 4, 3}
  tp.env.g = x:declare{symmetry = {tp.antisymmetric{1, 2}, tp.symmetric{3, 4}}}
  local g, d = tp.env.g, x
  truthy(held("g").packed)
  compare(g, d, {{3, 4}, {1, 2, 3}, {2}}, 1e-10, "anti{1,2} sym{3,4}")
  -- the group left alone stays declared (and packed) in the result
  eq(tostring(g:sum{1, 2}:properties().symmetry[1]), "symmetric{1,2}")
  eq(tostring(g:sum{3, 4}:properties().symmetry[1]), "antisymmetric{1,2}")
  tp.env.g = nil
end)

test("block-sparse: per tile, zero tiles meet 0, padding masked", function()
  -- 70 x 50 in tiles of 16 x 16 (edge tiles padded), negative values so padding would show
  -- (column tile 4 is stored whole, so its max over dim 1 must not meet the edge padding)
  local mask = tp.tensor({{true, false, false, true}, {false, false, false, true},
                          {false, true, false, true}, {true, false, false, true},
                          {false, false, false, true}})
  tp.env.b = -(tp.randn({70, 50}, {tiles = {16, 16}, nonzero = mask, dtype = "f64", seed = 4}):abs()) * 3
  local b = tp.env.b
  truthy(held("b").packed)
  compare(b, b:dense(), {{1}, {2}, {1, 2}}, 1e-10, "block-sparse 70x50")
  -- rows with no stored tile give zero tiles of a block-sparse result
  local r = tp.randn({70, 50}, {tiles = {16, 16}, nonzero = mask:logical_and(tp.tensor({true, true, true, false})),
                                dtype = "f64", seed = 4})
  eq(r:sum(2):properties().tiles, {16})
  eq(r:sum(2):properties().nonzero:totable(), {true, false, true, true, false})
  all_near{{r:sum(2), r:dense():sum(2), 1e-10}, {r:max(2), r:dense():max(2), 0}}
  -- 3-D, two dims summed
  local m3 = tp.rand({3, 2, 3}, {seed = 5}):gt(0.6)
  tp.env.c = tp.randn({12, 8, 12}, {tiles = {4, 4, 4}, nonzero = m3, dtype = "f64", seed = 6})
  compare(tp.env.c, tp.env.c:dense(), {{1, 3}, {2}, {3}}, 1e-10, "block-sparse 3-D")
  tp.env.b, tp.env.c = nil, nil
end)

test("the stored elements only: planned flops and bytes", function()
  tp.env.bd = tp.randn({512, 512}, {tiles = {64, 64}, nonzero = tp.eye(8, {dtype = "bool"}), seed = 7})
  tp.env.dd = tp.env.bd:dense()
  tp.env.sy = tp.randn({256, 256}, {symmetry = tp.symmetric{1, 2}, seed = 8})
  tp.env.sd = tp.env.sy:dense()
  tp.eval(tp.env.bd, tp.env.dd, tp.env.sy, tp.env.sd)
  local function cost(name, dims, mesh) return tp.plan(tp.env[name]:sum(dims), {mesh = mesh}):cost() end
  for _, mesh in ipairs{1, 3} do
    for _, dims in ipairs{{1}, {2}} do
      local what = "sum(" .. dims[1] .. ") on mesh " .. mesh
      -- block-diagonal: 1/8 of the tiles
      local p, q = cost("bd", dims, mesh), cost("dd", dims, mesh)
      truthy(p.flops <= 0.2 * q.flops, "block-sparse " .. what .. ": " .. p.flops .. " flops, dense " .. q.flops)
      -- symmetric: each stored off-diagonal element adds to two sums (its row's and, mirrored,
      -- its column's), so about the dense flops, from 0.53x the bytes
      p, q = cost("sy", dims, mesh), cost("sd", dims, mesh)
      truthy(p.flops <= 1.2 * q.flops, "symmetric " .. what .. ": " .. p.flops .. " flops, dense " .. q.flops)
      if mesh == 1 then
        truthy(p.peak_bytes <= 0.7 * q.peak_bytes, "symmetric " .. what .. ": peak " .. p.peak_bytes .. " bytes, dense "
               .. q.peak_bytes)
      end
    end
  end
  tp.env.bd, tp.env.dd, tp.env.sy, tp.env.sd = nil, nil, nil, nil
end)

check.summary()
