-- The planner's search (docs/planner.md §3): the same graph, mesh and options give the same plan
-- in another process and with another seed; it finds the known strategies on its own.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test = check.test
local nn = require "tapestry.nn"
local fem = require "tapestry.fem"

-- The attention-like graph of issue 20's reproducibility report, at a test's size.
local function attention()
  local B, H, L, D = 4, 8, 128, 32
  local q = tp.rand({B, H, L, D}, {seed = 8})
  local k = tp.rand({B, H, L, D}, {seed = 9})
  local v = tp.rand({B, H, L, D}, {seed = 10})
  return nn.attention(q, k, v)
end

-- Everything a plan is: its listing and its cost to the last bit.
local function fingerprint(y, mesh, seed)
  local p = tp.plan(y, {mesh = mesh, search = {seed = seed}})
  local c = p:cost()
  return string.format("%s\n%.17g %d %.17g", tostring(p), c.time, c.bytes_moved, c.flops)
end

test("search.same_plan_whatever_the_seed", function()
  local y = attention()
  for _, mesh in ipairs({8, 64, 1024}) do  -- exact on 8 and 64 ranks, by estimate on 1,024
    local a, b = fingerprint(y, mesh, 1), fingerprint(y, mesh, 7)
    assert(a == b, ("mesh %d: seed 1 and seed 7 plan differently:\n%s\n---\n%s"):format(mesh, a, b))
  end
end)

-- Two processes (each with a cold plan cache), on one rank: the same text, to the last digit,
-- the second while another process keeps a core busy. Exact searches (8 and 64 ranks) and
-- estimated ones (1,024) of attention and of a 10-op stencil chain, each search long enough
-- that a budget in seconds, or an order taken from pointers or hashes (which differ between
-- processes), would show in the plan or in the last digit of its cost.
test("search.same_plan_in_another_process", function()
  local tapestry = arg[-1]
  if tp.mesh().ranks ~= 1 or not tapestry then return end  -- children only from a 1-rank shell
  local script = os.tmpname() .. ".lua"
  local f = assert(io.open(script, "w"))
  f:write(([[
    package.path = %q .. "/../lib/?.lua;" .. package.path
    local nn = require "tapestry.nn"
    local fem = require "tapestry.fem"
    local B, H, L, D = 4, 8, 128, 32
    local q = tp.rand({B, H, L, D}, {seed = 8})
    local k = tp.rand({B, H, L, D}, {seed = 9})
    local v = tp.rand({B, H, L, D}, {seed = 10})
    local u = tp.rand({1024, 1024}, {seed = 13})
    for _ = 1, 5 do u = fem.heat_step(u, 0.1) end
    for _, y in ipairs({nn.attention(q, k, v), u}) do
      for _, mesh in ipairs({8, 64, 1024}) do
        local p = tp.plan(y, {mesh = mesh, search = {seed = tonumber(arg[1])}})
        local c = p:cost()
        print(tostring(p))
        print(string.format("%%.17g %%d", c.time, c.bytes_moved))
        -- and how many joint plans were costed (a budget in seconds costs fewer when busy)
        print((tostring(tp.explain(y, {mesh = mesh, search = {seed = tonumber(arg[1])}})):match("[^\n]*")))
      end
    end
  ]]):format(arg[0]:match("^(.*)/") or "."))
  f:close()
  local function run(seed)
    local p = assert(io.popen("'" .. tapestry .. "' '" .. script .. "' " .. seed .. " 2>&1"))
    local out = p:read("a")
    assert(p:close(), "child failed: " .. out)
    return out
  end
  local a = run(1)
  -- A spinning shell for the second run (its pid, to end it after), at most 60 s in any case.
  local spin = assert(io.popen("sh -c 'timeout 60 sh -c \"while :; do :; done\" >/dev/null 2>&1 & echo $!'"))
  local pid = spin:read("l")
  spin:close()
  local ok, b = pcall(run, 3)
  if pid and pid:match("^%d+$") then os.execute("kill " .. pid .. " 2>/dev/null") end
  os.remove(script)
  assert(ok, b)
  assert(#a > 0 and select(2, a:gsub("cost:", "")) == 6, "the child printed its six plans: " .. a)
  assert(a == b, "two processes (the second beside a busy core) planned differently:\n" .. a .. "\n---\n" .. b)
end)

-- Found without constraints: batch x head attention (nothing moves), 2-D halo blocks for heat.
test("search.finds_batch_head_and_2d_blocks", function()
  local p = tp.plan(attention(), {mesh = 32})
  assert(p:cost().bytes_moved == 0, "attention on 32 ranks moves nothing:\n" .. tostring(p))
  local u = tp.rand({4096, 4096}, {seed = 13})
  for _ = 1, 3 do u = fem.heat_step(u, 0.1) end
  local h = tostring(tp.plan(u, {mesh = 64}))
  assert(not h:find("d1/64", 1, true) and select(2, h:gsub("d1/8 x d2/8", "")) == 6,
         "heat on 64 ranks in 8x8 blocks, every step:\n" .. h)
end)

-- The free plan of an MLP is no slower than Megatron's column-then-row forced with constrain.
test("search.mlp_within_megatron", function()
  local x = tp.rand({1024, 256}, {seed = 5})
  local w1 = tp.eval(tp.rand({256, 1024}, {seed = 6}))
  local w2 = tp.eval(tp.rand({1024, 256}, {seed = 7}))
  local h = x:matmul(w1):gelu()
  local free = tp.plan(h:matmul(w2), {mesh = 8}):cost().time
  local hand = tp.plan(h:constrain(tp.split(2)):matmul(w2):constrain(tp.split(1)), {mesh = 8}):cost().time
  assert(free <= 1.1 * hand, ("free %g s, Megatron %g s"):format(free, hand))
end)

-- And the plan runs: observed on this session's ranks, the value equals the one-rank result.
test("search.plan_runs", function()
  local y = attention()
  local s = y:sum():item()
  assert(math.abs(s - 4 * 8 * 128 * 32 * 0.5) < 4 * 8 * 128 * 32 * 0.05, "attention of uniform values averages ~0.5: " .. s)
end)

check.summary()
