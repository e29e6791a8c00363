-- W7: one MLP training step (docs/benchmarks.md): 4 layers of 1024, batch 1024, cross-entropy, SGD.
-- Forward 4 matmuls, backward 8: 12 x 2 x 1024^3 = 25.8 GFLOP per step.
--   tapestry bench/w7_mlp.lua             (BENCH_SMALL=1: width 32, batch 32, one run)
-- Gradients come from tp.grad (reverse mode; docs/gradients.md).
local B = dofile((arg[0]:match("(.*/)") or "./") .. "common.lua")
local nn = require "tapestry.nn"
local width = B.small and 32 or 1024
local batch = B.small and 32 or 1024
local classes = width
local lr = 0.01

local params = {}
for l = 1, 4 do
  params[#params + 1] = tp.eval(tp.randn({width, width}, {seed = l}) * math.sqrt(2 / width))
  params[#params + 1] = tp.detach(tp.zeros({width}))   -- a leaf: tp.grad needs one
end

local function loss_of(ps, x, labels)
  local layers = {}
  for l = 1, 4 do layers[l] = {w = ps[2 * l - 1], b = ps[2 * l]} end
  return nn.cross_entropy(nn.mlp(x, layers), labels)
end

local median = B.time(function(i)
  local x = tp.randn({batch, width}, {seed = 1000 + i})
  local labels = (tp.rand({batch}, {seed = 2000 + i}) * classes):floor():cast("i64") + 1
  return {tp.eval(x, labels)}
end, function(t)
  local x, labels = t[1], t[2]
  -- Forward, backward and the SGD update computed in one observation (the loss with it, as a
  -- training loop would log it), like torch's step + loss.item().
  local loss = loss_of(params, x, labels)
  local grads = tp.grad(loss, params)
  local new = {}
  for k, p in ipairs(params) do new[k] = p - lr * grads[k] end
  local out = {tp.eval(loss, table.unpack(new))}
  params = {table.unpack(out, 2)}
end)
B.report("W7", "tapestry", median, string.format("width=%d batch=%d", width, batch))
