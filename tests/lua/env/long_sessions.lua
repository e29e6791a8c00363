-- Long sessions stay fast: a named tensor's computed value cuts its history, so rebinding and
-- observing in a loop costs the same at every iteration; iterating tp.env and observing do not
-- grow with the number of names.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local function live_nodes()
  collectgarbage()
  collectgarbage()
  return tp.stats().live_nodes
end

test("rebind_and_observe.constant_cost", function()
  tp.env.w = tp.rand({100}, {seed = 1})
  local evaluated, nodes = {}, {}
  for i = 1, 3000 do
    local before = tp.stats().nodes_evaluated
    tp.env.w = tp.env.w * 0.999 + 0.001
    tp.env.w:sum():item()
    evaluated[i] = tp.stats().nodes_evaluated - before
    if i == 10 or i == 3000 then nodes[i] = live_nodes() end
  end
  eq(evaluated[3000], evaluated[10])  -- no old step is recomputed
  check.truthy(nodes[3000] <= nodes[10] + 50, "live nodes " .. nodes[10] .. " -> " .. nodes[3000])
  -- The same loop over a local computes the same values.
  local w = tp.rand({100}, {seed = 1})
  for _ = 1, 3000 do w = tp.eval(w * 0.999 + 0.001) end
  check.near(tp.env.w:totable(), w:totable(), 1e-5)
  tp.env.w = nil
end)

test("rebind_without_observing.bounded", function()
  tp.env.u = tp.rand({10}, {seed = 2})
  local base = live_nodes()
  for _ = 1, 5000 do tp.env.u = tp.env.u * 0.5 + 0.5 end
  -- A chain of pending rebinds is computed every 1000: at most that many pending nodes.
  check.truthy(live_nodes() - base <= 2 * 1000 + 100, "live nodes grew by " .. live_nodes() - base)
  check.near(tp.env.u:totable(), tp.ones{10}:totable(), 1e-6)
  tp.env.u = nil
end)

-- Builders fold a reshape of a reshape (and a constraint of a constraint) into one node, but
-- never through a computed one: its input may have no value, and each step would then
-- recompute every step before it (a 200-step matvec loop took 38 s).
test("evaluated_wrappers.not_folded_away", function()
  -- The work of an observation: nodes the single-rank evaluator ran, or blocks of a sharded plan.
  local function work()
    local s = tp.stats()
    return s.nodes_evaluated + s.blocks_run
  end
  local n = 16
  local A = tp.eval(tp.randn({n, n}, {seed = 4}) / n)
  local p = tp.eval(tp.randn({n}, {seed = 5}))
  local q = p:totable()
  local evaluated = {}
  for i = 1, 60 do
    local before = work()
    p = tp.eval(A:matmul(p))  -- reshape({n,1} -> {n}) of a product of reshape(p)
    evaluated[i] = work() - before
  end
  eq(evaluated[60], evaluated[5])
  -- The same steps one at a time, from plain tables.
  local a = A:totable()
  for _ = 1, 60 do
    local r = {}
    for i = 1, n do
      local s = 0
      for k = 1, n do s = s + a[i][k] * q[k] end
      r[i] = s
    end
    q = r
  end
  check.near(p:totable(), q, 1e-4)

  local c = tp.eval(tp.randn({8, 8}, {seed = 6}))
  for i = 1, 60 do
    local before = work()
    c = tp.eval((c * 0.5):constrain(tp.split(1, 2)))
    c = tp.eval(c:constrain(tp.split(2, 2)))
    evaluated[i] = work() - before
  end
  eq(evaluated[60], evaluated[5])
end)

test("named_value_is_a_leaf", function()
  local x = tp.tensor({1, 2, 3}, {dtype = "f64"})
  tp.env.h = x * 2
  tp.eval(tp.env.h)
  -- A parameter: its gradient is taken at the stored value; the history before it is cut.
  local h = tp.env.h
  eq(tp.grad((h * h):sum(), {h})[1]:totable(), {4, 8, 12})
  eq(tp.grad(tp.env.h:sum(), {x})[1]:totable(), {0, 0, 0})
  tp.env.h = nil
end)

local function seconds(fn)
  local t = os.clock()
  fn()
  return os.clock() - t
end

test("many_names.linear", function()
  local observe = function() for _ = 1, 300 do tp.ones{2}:sum():item() end end
  local alone = seconds(observe)
  for i = 1, 20000 do tp.env["n" .. i] = tp.ones{1} end
  tp.ones{1}:sum():item()  -- computes the bindings
  local count = 0
  local walk = seconds(function() for _ in pairs(tp.env) do count = count + 1 end end)
  eq(count, 20000)
  check.truthy(walk < 1.0, "pairs over 20000 names took " .. walk .. " s")  -- quadratic: 6 s
  local crowded = seconds(observe)
  check.truthy(crowded < 5 * alone + 0.05, "observing with 20000 names: " .. crowded .. " s, " .. alone .. " s without")
  for i = 1, 20000 do tp.env["n" .. i] = nil end
end)

check.summary()
