-- Modelled meshes of named axes (tp.mesh{...}) and layouts sized by the mesh being planned.

-- The allocation: the CPU kernels' vector instructions, AVX-512 wherever the CPU has it.
local here = tp.mesh()
assert(here.cpu_isa == "avx2" or here.cpu_isa == "avx512", "cpu_isa: " .. tostring(here.cpu_isa))

-- Axes outermost first: nodes before gpus whatever the table order, or as `order` says.
local m = tp.mesh{gpus = 8, nodes = 16}
assert(m.ranks == 128, "16 x 8 ranks")
assert(m.axes[1].name == "nodes" and m.axes[1].size == 16, "nodes outermost")
assert(m.axes[2].name == "gpus" and m.axes[2].size == 8, "gpus innermost")
assert(m.axes[2].bandwidth > m.axes[1].bandwidth, "gpus talk over a faster link than nodes")
local o = tp.mesh{a = 2, b = 3, order = {"b", "a"}}
assert(o.axes[1].name == "b" and o.axes[2].name == "a", "order sets the nesting")
local slow = tp.mesh{nodes = 4, gpus = 2, links = {gpus = {bandwidth = 1e9, latency = 1e-5}}}
assert(slow.axes[2].bandwidth == 1e9 and slow.axes[2].latency == 1e-5, "links set an axis' link")

-- Plans on it: the same values as on one rank, and the description in print(plan).
local x = tp.rand({256, 64}, {seed = 1})
local w = tp.rand({64, 64}, {seed = 2})
local y = tp.relu(x:matmul(w) + 1)
local p = tp.plan(y, {mesh = m})
assert(tostring(p):find("nodes=16 x gpus=8", 1, true), "print(plan) names the axes")
assert(p:cost().time > 0, "costed")
-- A slower link along an axis never makes the plan faster.
local fast = tp.plan(y, {mesh = tp.mesh{nodes = 4, gpus = 2}}):cost().time
local slowed = tp.plan(y, {mesh = slow}):cost().time
assert(slowed >= fast * (1 - 1e-9), ("slower links, faster plan? %g < %g"):format(slowed, fast))

-- tp.split(d) without parts: one part per rank of the mesh a plan is made for.
local s = x:constrain(tp.split(1))
for _, ranks in ipairs({2, 8}) do
  local text = tostring(tp.plan(s * 2, {mesh = ranks}))
  assert(text:find("constrain #%d+ {256,64} f32: d1/" .. ranks), ("split(1) on %d ranks:\n%s"):format(ranks, text))
end
assert(tostring(tp.split(1)) == "split(1)", "the layout prints in the footer's notation")
assert(math.abs((s * 2):sum():item() - (x * 2):sum():item()) < 1e-3, "values do not depend on the layout")

-- Bad meshes: clear errors, nothing changed.
local function fails(f, want)
  local ok, err = pcall(f)
  assert(not ok and tostring(err):find(want, 1, true), ("want %q, got %s"):format(want, tostring(err)))
end
fails(function() return tp.mesh{gpus = 0} end, "axis 'gpus' needs a size in 1..2^20, got 0")
fails(function() return tp.mesh{gpus = 2.5} end, "axis 'gpus' needs a size")
fails(function() return tp.mesh{} end, "needs 1..8 named axes")
fails(function() return tp.mesh{a = 2, order = {"b"}} end, "'order' names 'b'")
fails(function() return tp.mesh{a = 2, links = {a = {bandwidth = -1}}} end, "positive bandwidth")
fails(function() return tp.mesh{4, 8} end, "named axes")
fails(function() return tp.plan(y, {mesh = {axes = {{name = "a", size = 0, bandwidth = 1, latency = 0}}}}) end,
  "axis 'a' needs a size")
print("meshes ok")
