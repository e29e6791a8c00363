-- What an evaluated value costs in memory: kept while a Tensor refers to it or a pending
-- expression will read it, released after (the release rule, engine/ir/node.hpp).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local function live()
  collectgarbage()
  collectgarbage()
  tp.full({1}, 0):sum():item()  -- an observation frees the shards no one can read any more
  return tp.stats().bytes_live
end

local lap = {{0, 1, 0}, {1, -4, 1}, {0, 1, 0}}
local grid = 256 * 256 * 4

test("loop.keeps_one_state", function()
  local u = tp.eval(tp.rand({256, 256}, {seed = 3}))
  local base = live()
  for _ = 1, 20 do u = tp.eval(u + 0.1 * tp.stencil(u, lap)) end
  local mid = live()
  for _ = 1, 20 do u = tp.eval(u + 0.1 * tp.stencil(u, lap)) end
  local grew = live() - mid
  -- Bounded: one state (the graph keeps each step's 3x3 kernel: 36 bytes a step).
  check.truthy(mid - base <= grid + 1024, "bytes_live grew by " .. (mid - base) .. " in 20 steps")
  check.truthy(grew <= grid // 4, "bytes_live grew by " .. grew .. " from step 20 to 40")
end)

test("loop.step_after_eval_does_not_recompute", function()
  local u = tp.rand({64, 64}, {seed = 4})
  local per_step = {}
  for i = 1, 12 do
    local before = tp.stats().nodes_evaluated
    u = tp.eval(u) * 0.5 + 1   -- evaluate the state, then build the next step on it
    collectgarbage()
    per_step[i] = tp.stats().nodes_evaluated - before
  end
  -- each observation computes one step, however long the loop has run
  eq(per_step[12], per_step[3])
end)

test("values.pending_expression_keeps_its_input", function()
  local x = tp.arange(1, 6)
  local h = tp.eval(x * 2)
  local y = h + 1
  h = nil
  collectgarbage()
  collectgarbage()
  local before = tp.stats().nodes_evaluated
  eq(y:totable(), {3, 5, 7, 9, 11, 13})
  eq(tp.stats().nodes_evaluated - before <= 2, true)   -- y's add, not x * 2 again
end)

test("values.released_then_recomputed_if_asked", function()
  local x = tp.arange(1, 4)
  local function step(t) return t * t end
  local y = tp.eval(step(x))
  y = nil
  collectgarbage()
  eq(step(x):totable(), {1, 4, 9, 16})   -- the same expression, computed again
end)

test("grad.through_an_evaluated_loss", function()
  local w = tp.detach(tp.tensor({1.0, 2.0, 3.0}))
  local loss = tp.eval((w * w):sum())
  eq(loss:item(), 14)
  collectgarbage()
  eq(tp.grad(loss, {w})[1]:totable(), {2, 4, 6})
end)

check.summary()
