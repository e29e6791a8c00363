-- A five-minute tour of Tapestry. Run it with:  tapestry -i scripts/tour.lua
-- (-i leaves you in the shell afterwards, with everything below still defined).

local function section(title) print("\n== " .. title .. " " .. string.rep("=", 60 - #title)) end

section("1. Tensors are lazy")
-- Building an expression computes nothing: it adds nodes to a graph.
local x = tp.arange(-2, 2)              -- -2, -1, 0, 1, 2 (ranges are inclusive, like Lua's for)
local y = tp.relu(x) * 2
print("y is a " .. y.dtype .. " tensor of shape {" .. table.concat(y.shape, ",") .. "}")
print("kernels run so far:", tp.stats().kernels)
-- Observing it (print, item, totable, tp.eval) plans and runs what it needs.
print(y)

section("2. Creating tensors")
print(tp.tensor{{1, 2}, {3, 4}})
print(tp.zeros({2, 3}, {dtype = "i32"}))
print(tp.linspace(0, 1, 5))
print(tp.eye(3))
-- Random values depend only on (seed, element index): the same on any mesh.
local r = tp.rand({2, 4}, {seed = 42})
print(r)

section("3. Math, broadcasting and types")
local m = tp.arange(1, 6):reshape{2, 3}   -- {{1,2,3},{4,5,6}}
print(m + tp.tensor{10, 20, 30})          -- {3} broadcasts over the rows
print(m:gt(3))                            -- comparisons give bool tensors
print(tp.where(m:gt(3), m, 0))
print(tp.tensor({1, 2, 3}, {dtype = "i32"}) / 2)   -- true division: i32 / 2 is f64, as numpy

section("4. Reductions and matmul")
print("sum of all:", m:sum():item())
print("sum of each row:", m:sum(2))
print("column means, kept as a row:", m:mean(1, {keepdim = true}))
print("variance with Bessel's correction:", m:var(nil, {correction = 1}):item())
print(m:matmul(m:t()))                    -- {2,3} @ {3,2}

section("5. Shapes and slices (1-based, inclusive)")
local g = tp.arange(1, 12):reshape{3, 4}
print(g[{ {1, 2}, {} }])                  -- rows 1..2, every column
print(g[{ {}, -1 }])                      -- the last column, as a 1-D tensor
print(g:narrow(2, 2, 2))                  -- columns 2..3
print("cat:   {" .. table.concat(tp.cat({g, g}, 1).shape, ",") .. "}")   -- {6,4}
print("stack: {" .. table.concat(tp.stack({g, g}).shape, ",") .. "}")     -- {2,3,4}

section("6. Fusion: one pass over memory")
local a, b, c = tp.rand({1000000}, {seed = 1}), tp.rand({1000000}, {seed = 2}), tp.rand({1000000}, {seed = 3})
tp.eval(a, b, c)
local before = tp.stats()
local out = tp.tanh(a * b + c):sum():item()
local after = tp.stats()
print(string.format("tanh(a*b+c):sum() = %.3f using %d kernels; %d ops were fused away",
  out, after.kernels - before.kernels, after.fused_ops - before.fused_ops))

section("7. Named tensors and errors")
tp.env.w = tp.randn({3, 3}, {seed = 7})   -- computed at the next observation
print("tp.env.w has shape {" .. table.concat(tp.env.w.shape, ",") .. "}")
local before_sum = tp.env.w:sum():item()
local ok, err = pcall(function() tp.env.w = tp.env.w:matmul(tp.ones{2, 2}) end)
print("a mistake is a Lua error, caught by pcall:\n  " .. err)
print("and tp.env.w is untouched:", tp.env.w:sum():item() == before_sum)
for _, row in ipairs(tp.tensors()) do
  print(string.format("  %-4s %-8s %-4s %d bytes", row.name, "{" .. table.concat(row.shape, ",") .. "}", row.dtype, row.bytes))
end

print("\nThat's the tour. Try :help, :help tp.matmul, or any expression at the prompt.")
