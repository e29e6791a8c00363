-- Trains a small MLP to classify a three-armed spiral, with tp.grad and nn.adam.
--   tapestry scripts/train_mlp.lua            -- one rank
--   TAPESTRY_RANKS=4 tapestry scripts/train_mlp.lua   (or tapestry -n 4 ...): the same losses
-- Data, initial weights and every update are lazy tensors; each step is one observation that
-- computes the batch loss, the gradients and the Adam update together. Fails (exit 1) if
-- the final loss is not below THRESHOLD.
local nn = require "tapestry.nn"

local POINTS, CLASSES, HIDDEN = 300, 3, 32
local BATCH, EPOCHS, LR = 100, 100, 0.02
local THRESHOLD = 0.15  -- mean cross-entropy of the last epoch (chance is log 3 = 1.10)
local dtype = "f64"  -- f64: the losses agree across meshes to ~1e-12, not f32 rounding apart

-- The spiral: point i belongs to class (i-1) % 3, so every batch holds all classes.
local idx = tp.arange(0, POINTS - 1, {dtype = dtype})
local class = idx % CLASSES
local t = (idx // CLASSES) / (POINTS / CLASSES - 1)          -- 0..1 along each arm
local theta = class * (2 * math.pi / CLASSES) + t * 4 + tp.randn({POINTS}, {seed = 7, dtype = dtype}) * 0.15
local x = tp.stack({t * theta:sin(), t * theta:cos()}, 2)     -- {POINTS, 2}
local labels = class:cast("i64") + 1
x, labels = tp.detach(x, labels)

-- Parameters are named tensors; biases start as leaves (tp.zeros alone is a folded constant).
local function init(name, shape, fan_in, seed)
  tp.env[name] = tp.randn(shape, {seed = seed, dtype = dtype}) * math.sqrt(2 / fan_in)
end
init("w1", {2, HIDDEN}, 2, 1)
init("w2", {HIDDEN, HIDDEN}, HIDDEN, 2)
init("w3", {HIDDEN, CLASSES}, HIDDEN, 3)
tp.env.b1, tp.env.b2, tp.env.b3 = tp.detach(tp.zeros({HIDDEN}, {dtype = dtype}),
  tp.zeros({HIDDEN}, {dtype = dtype}), tp.zeros({CLASSES}, {dtype = dtype}))
local names = {"w1", "b1", "w2", "b2", "w3", "b3"}

local function loss_of(xb, yb)
  local e = tp.env
  local logits = nn.mlp(xb, {{e.w1, e.b1}, {e.w2, e.b2}, {e.w3, e.b3}}, "tanh")
  return nn.cross_entropy(logits, yb)
end

local start, last = tp.clock(), math.huge
for epoch = 1, EPOCHS do
  local total = 0
  for first = 1, POINTS, BATCH do
    local xb = x[{{first, first + BATCH - 1}, {}}]
    local yb = labels[{{first, first + BATCH - 1}}]
    local loss = loss_of(xb, yb)
    local params = {}
    for i, n in ipairs(names) do params[i] = tp.env[n] end
    nn.adam(params, tp.grad(loss, params), {lr = LR, eval = {loss}})
    total = total + loss:item()
  end
  last = total / (POINTS // BATCH)
  if epoch % 10 == 0 or epoch == 1 then print(string.format("epoch %3d  loss %.9f", epoch, last)) end
end
local steps = EPOCHS * (POINTS // BATCH)
print(string.format("%d steps in %.2f s (%.1f ms/step) on %d rank(s)", steps, tp.clock() - start,
                    (tp.clock() - start) / steps * 1000, tp.mesh().ranks))
local e = tp.env
local logits = nn.mlp(x, {{e.w1, e.b1}, {e.w2, e.b2}, {e.w3, e.b3}}, "tanh")
local acc = logits:argmax(2):eq(labels):cast("f64"):mean():item()
print(string.format("final loss %.6f (threshold %.2f), training accuracy %.3f", last, THRESHOLD, acc))
if not (last < THRESHOLD) then
  error(string.format("train_mlp: the loss %.6f did not fall below %.2f", last, THRESHOLD), 0)
end
