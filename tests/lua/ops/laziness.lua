-- Laziness, pruning and fusion, observed through tp.stats() counters.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, eq, same = check.test, check.eq, check.same

-- What running fn cost, as differences of the counters.
local function cost(fn)
  local s0 = tp.stats()
  fn()
  local s1 = tp.stats()
  local d = {}
  for k, v in pairs(s1) do
    if type(v) == "number" and type(s0[k]) == "number" then d[k] = v - s0[k] end
  end
  return d
end

test("stats.fields", function()
  local s = tp.stats()
  for _, k in ipairs{"observations", "nodes_evaluated", "kernels", "fused_ops",
                     "bytes_allocated", "time_schedule", "time_run"} do
    check.truthy(type(s[k]) == "number" and s[k] >= 0, "tp.stats()." .. k)
  end
end)

test("building_runs_nothing", function()
  local d = cost(function()
    local a = tp.rand({100, 100}, {seed = 1})
    local b = tp.exp(a):matmul(a:t()) + tp.ones{100}
    local c = b:sum(1):reshape{10, 10}:permute{2, 1}[{{1, 5}}]
    local _ = c.shape, c.dtype, c:dim(), c:numel(), c:size(1), #c
    tp.env.lazy = c * 2  -- binding a name computes nothing either
  end)
  eq(d.kernels, 0, "kernels")
  eq(d.observations, 0, "observations")
  eq(d.nodes_evaluated, 0, "nodes evaluated")
  tp.env.lazy = nil
end)

test("observation_counts", function()
  local x = tp.rand({4}, {seed = 2}) + 1
  local d = cost(function() x:sum():item() end)
  eq(d.observations, 1, "one item() is one observation")
  check.truthy(d.kernels >= 1, "it runs kernels")
end)

test("dead_branch_pruned", function()
  -- the same live expression costs the same with and without a dead one beside it
  local function live(seed) return (tp.rand({64, 64}, {seed = seed}) * 3 + 1):sum() end
  local base = cost(function() live(10):item() end)
  local with_dead = cost(function()
    local a = tp.rand({64, 64}, {seed = 11})
    local dead = tp.exp(a):matmul(a) + tp.tanh(a)
    local y = (a * 3 + 1):sum()
    y:item()
    check.truthy(dead ~= nil)
  end)
  eq(with_dead.kernels, base.kernels, "kernels")
  eq(with_dead.nodes_evaluated, base.nodes_evaluated, "nodes evaluated")
end)

test("shared_subexpression_branch", function()
  local a = tp.rand({32, 32}, {seed = 12})
  local b = a + 1
  local dead = tp.exp(b):sum()
  local d = cost(function() (b * 2):max():item() end)
  local e = cost(function() ((tp.rand({32, 32}, {seed = 13}) + 1) * 2):max():item() end)
  eq(d.kernels, e.kernels, "the dead exp(b):sum() adds no kernel")
  check.truthy(dead ~= nil)
end)

test("fusion.tanh_fma", function()
  local a, ra = gen.pair({50, 40}, "f32", 900)
  local b, rb = gen.pair({50, 40}, "f32", 901)
  local c, rc = gen.pair({50, 40}, "f32", 902)
  tp.eval(a, b, c)
  local y
  local d = cost(function() y = tp.eval(tp.tanh(a * b + c)) end)
  eq(d.kernels, 1, "tanh(a*b+c) is one kernel")
  check.truthy(d.fused_ops >= 2, "fused_ops >= 2, got " .. tostring(d.fused_ops))
  same(y, ref.unary("tanh", ref.binary("add", ref.binary("mul", ra, rb), rc)))
end)

test("eval.materializes", function()
  local a = tp.rand({20, 30}, {seed = 14})
  local y = tp.eval(a * 2 + 1)
  eq(y.shape, {20, 30})
  local d = cost(function() y:totable() end)
  eq(d.kernels, 0, "observing an evaluated tensor runs no kernel")
  local d2 = cost(function() y:totable() end)
  eq(d2.kernels, 0, "nor does observing it again")
end)

test("eval.multiple", function()
  local a = tp.rand({8}, {seed = 15})
  local ra = ref.of(a)
  local p, q = tp.eval(a + 1, a * 2)
  local d = cost(function()
    same(p, ref.binary("add", ra, 1))
    same(q, ref.binary("mul", ra, 2))
  end)
  eq(d.kernels, 0, "both were materialized by one tp.eval")
end)

test("observed_twice_same_value", function()
  local x = tp.randn({100}, {seed = 16}) * 2
  local first = x:totable()
  eq(x:totable(), first, "a lazy tensor has one value")
  eq(tostring(x), tostring(x))
end)

test("print_is_an_observation", function()
  local x = tp.rand({3}, {seed = 17}) + 5
  local d = cost(function() tostring(x) end)
  check.truthy(d.kernels >= 1 and d.observations >= 1, "tostring runs the expression")
end)

test("named_tensor_lazy", function()
  local a = tp.rand({10}, {seed = 18})
  local ra = ref.of(a)
  local d = cost(function() tp.env.n = tp.exp(a) end)
  eq(d.kernels, 0, "binding computes nothing")
  same(tp.env.n, ref.unary("exp", ra))
  local d2 = cost(function() tp.env.n:totable() end)
  eq(d2.kernels, 0, "a named tensor is stored once computed")
  tp.env.n = nil
end)

check.summary()
