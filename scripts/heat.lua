-- 2-D heat diffusion: 100 explicit steps of du/dt = laplacian(u) on a 128 x 128 grid, the
-- shard map of the grid split over 4 ranks, and the halo traffic that split costs per step.
-- Run it with:  tapestry scripts/heat.lua   (or tapestry -n 4 scripts/heat.lua)
local fem = require "tapestry.fem"

local n, steps, alpha = 128, 100, 0.2   -- alpha = dt/h^2 must be <= 1/4 in 2-D for stability
local i = tp.arange(1, n):unsqueeze(2)
local j = tp.arange(1, n):unsqueeze(1)
-- A hot square in the middle of a cold plate (an expression: each rank can make its part).
local hot = tp.logical_and(tp.logical_and(i:gt(56), i:le(72)), tp.logical_and(j:gt(48), j:le(64)))
local u0 = tp.where(hot, 100.0, 0.0)

-- A small picture of a field: block means of 8 x 8 cells, as characters.
local function show(field)
  local shades = " .:-=+*#%@"
  local m = field:reshape{n // 8, 8, n // 8, 8}:mean({2, 4}):totable()
  for _, row in ipairs(m) do
    local line = {}
    for c, v in ipairs(row) do
      local k = math.max(1, math.min(#shades, math.floor(v / 100 * (#shades - 1)) + 1))
      line[c] = shades:sub(k, k):rep(2)
    end
    print("  " .. table.concat(line))
  end
end

print("Temperature at t = 0:")
show(u0)

-- 1. The shard map: split the rows over 4 ranks. Each rank owns a band of 32 rows.
local split = tp.split(1, 4)
print("\nShard map of u:constrain(tp.split(1, 4)) on a 4-rank mesh:")
print(tp.layout_map(u0:constrain(split), {mesh = 4}))

-- 2. Halo traffic: a step needs each cell's 4 neighbours, so each band needs one row from
-- the band above and one from below -- not the whole grid. (u0 is made where it is needed;
-- a grid held whole on one rank would first have to be scattered.)
local step = fem.heat_step(u0:constrain(split), alpha, {boundary = "periodic"}):constrain(split)
local cost = tp.plan(step, {mesh = 4}):cost()
local grid_bytes = n * n * 4
local halo_bytes = 4 * 2 * n * 4   -- 4 bands, a row from each side, n f32 values a row
print(string.format("One step on 4 ranks moves %d bytes, against %d bytes for the whole grid:\n"
                    .. "  the 8 halo rows are %d bytes; the rest is the 3x3 stencil kernel and edge slivers.",
                    cost.bytes_moved, grid_bytes, halo_bytes))

-- 3. Run it. tp.eval each step keeps the graph one step deep; the planner caches the plan.
local u = tp.eval(u0)
local total0 = u:sum():item()
local t0 = tp.clock()
for _ = 1, steps do
  u = tp.eval(fem.heat_step(u, alpha, {boundary = "periodic"}))
end
local elapsed = tp.clock() - t0
print(string.format("\n%d steps in %.2f s. Periodic boundaries conserve heat: total %.2f -> %.2f",
                    steps, elapsed, total0, u:sum():item()))
print(string.format("The peak cooled from 100 to %.2f as the heat spread:", u:max():item()))
show(u)
