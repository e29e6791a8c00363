-- A 4-layer MLP forward pass on a batch, written with tapestry.nn, and the plan Tapestry
-- would run it with on 4 ranks. Run it with:  tapestry scripts/mlp.lua
local nn = require "tapestry.nn"

-- 784 -> 512 -> 256 -> 128 -> 10, He-initialized so activations keep their scale.
local sizes, batch = {784, 512, 256, 128, 10}, 256
local layers = {}
for i = 1, #sizes - 1 do
  layers[i] = {
    w = tp.randn({sizes[i], sizes[i + 1]}, {seed = i}) * math.sqrt(2 / sizes[i]),
    b = tp.zeros{sizes[i + 1]},
  }
end
local x = tp.randn({batch, sizes[1]}, {seed = 100})

-- Nothing runs yet: `logits` is an expression of 4 matmuls, 4 bias adds and 3 relus.
local logits = nn.mlp(x, layers)
print(string.format("logits: {%s}, built from %d layers; kernels run so far: %d",
                    table.concat(logits.shape, ","), #layers, tp.stats().kernels))

-- The plan on a modelled 4-rank mesh: which rank computes which block of each op, what
-- moves between ranks, and what it would cost. (Planning computes nothing.)
local plan = tp.plan(logits, {mesh = 4})
print(plan)
local c = plan:cost()
print(string.format("modelled on 4 ranks: %.1f MFLOP, %.1f KB moved, %.1f us",
                    c.flops / 1e6, c.bytes_moved / 1e3, c.time * 1e6))

-- Now run it here. An untrained network guesses: its loss is of the order of log(10) = 2.303,
-- the loss of a uniform guess over 10 classes.
local labels = (tp.arange(0, batch - 1) % 10 + 1):cast("i64")
local probs = nn.softmax(logits, 2)
local loss = nn.cross_entropy(logits, labels)
local t0 = tp.clock()
tp.eval(probs, loss)
print(string.format("forward pass on %d samples: %.1f ms", batch, (tp.clock() - t0) * 1e3))
print(string.format("probabilities sum to %.6f (first row); loss %.4f (a uniform guess: log(10) = %.4f)",
                    probs[1]:sum():item(), loss:item(), math.log(10)))
print("predicted classes of the first 8 samples:")
print(logits[{{1, 8}, {}}]:argmax(2))
