-- Small operations on computed tensors (a CG iteration's a * b, x + alpha * p, (p * Ap):sum(),
-- A:matmul(p)) are recorded and run op by op when observed, on one rank (docs/architecture.md,
-- "Pending records"). They must give the graph's values bit for bit, its errors, its gradients
-- and its printing, and keep memory bounded in a loop. Each comparison computes the same
-- expression twice: from computed inputs (records) and from inputs not computed yet (the
-- graph: nothing is recorded on a lazy input).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

-- Records are taken on one rank on the CPU (elsewhere, or with TAPESTRY_RECORDS=0, everything
-- is built as nodes: the values agree all the same).
local records = tp.mesh().ranks == 1 and tp.mesh().device == "cpu" and os.getenv("TAPESTRY_RECORDS") ~= "0"

-- Every element of two tensors the same bits (NaN equal to NaN, -0 unlike 0). On several
-- ranks there are no records, and the two sides' plans may split sums differently: there,
-- within the rounding of a split sum.
local exact = tp.mesh().ranks == 1
local flat = require("gradcheck").flatten  -- nested tables to one list, in order
local function same_bits(got, want, what)
  eq(got.dtype, want.dtype, what .. ": dtype")
  eq(got.shape, want.shape, what .. ": shape")
  local g, w = flat(got:totable()), flat(want:totable())
  eq(#g, #w, what .. ": count")
  for i = 1, #g do
    local a, b = g[i], w[i]
    local same = (a ~= a and b ~= b) or (a == b and (a ~= 0 or 1 / a == 1 / b))
    if not exact and not same then
      local tol = got.dtype == "f64" and 1e-11 or 1e-4
      same = math.abs(a - b) <= tol * math.max(1, math.abs(a), math.abs(b))
    end
    if not same then error(string.format("%s: element %d: %.17g vs %.17g", what, i, a, b), 2) end
  end
end

local function inputs(shape, dtype, seed) return tp.eval(tp.randn(shape, {seed = seed, dtype = dtype})) end

-- Whether t is not computed yet (so an operation on it builds a node): with records, one on a
-- computed tensor makes no node. Where records are off, always true.
local probes = 0
local function lazy(t)
  probes = probes + 1  -- a number never used before: the node cannot exist already
  collectgarbage("stop")  -- no Tensor (and node) collected meanwhile
  local before = tp.stats().live_nodes
  local y = t + probes
  local made = tp.stats().live_nodes > before
  collectgarbage("restart")
  return made, y
end

-- x, exactly, as a node not computed yet (an operation on it builds nodes, as before records):
-- times a one made of a random tensor never drawn before, so no earlier observation computed it.
local function graph(x)
  probes = probes + 1
  local ones = {}
  for d = 1, x:dim() do ones[d] = 1 end
  return (tp.rand(ones, {seed = 1000000 + probes, dtype = x.dtype}) * 0 + 1) * x
end

for _, dtype in ipairs{"f32", "f64"} do
  for _, n in ipairs{1, 7, 16, 31, 64, 100, 256, 1000, 4096} do
    test(string.format("maps and sums, %s, %d elements", dtype, n), function()
      local a = inputs({n}, dtype, n)
      local b = inputs({n}, dtype, n + 1)
      local cases = {
        {"a * b", function(x, y) return x * y end},
        {"a + b", function(x, y) return x + y end},
        {"a - b", function(x, y) return x - y end},
        {"a / b", function(x, y) return x / y end},
        {"a * 2.5", function(x) return x * 2.5 end},
        {"3 - a", function(x) return 3 - x end},
        {"1 / a", function(x) return 1 / x end},
        {"a + 7", function(x) return x + 7 end},
        {"a * 0.1 (rounded to the dtype)", function(x) return x * 0.1 end},
        {"x + alpha * p", function(x, y) return x + 0.37 * y end},
        {"(a * b):sum()", function(x, y) return (x * y):sum() end},
        {"(a * a + b):sum()", function(x, y) return (x * x + y):sum() end},
        {"a:sum()", function(x) return x:sum() end},
        {"(a / 0):sum() (inf and nan)", function(x) return (x / 0):sum() end},
      }
      for _, c in ipairs(cases) do
        local want = c[2](graph(a), graph(b))
        check.truthy(lazy(want), c[1] .. ": the graph's side is a node")
        same_bits(tp.eval(c[2](a, b)), want, c[1])
      end
      eq((a * b):sum():item(), (graph(a) * graph(b)):sum():item(), "item")
      if records then check.truthy(not lazy(a * b), "computed inputs take records") end
    end)
  end
  for _, mk in ipairs{{1, 1}, {5, 3}, {100, 17}, {256, 256}, {4096, 8}, {3, 300}} do
    test(string.format("matrix times vector, %s, %d x %d", dtype, mk[1], mk[2]), function()
      local A = inputs(mk, dtype, 7)
      local v = inputs({mk[2]}, dtype, 8)
      same_bits(tp.eval(A:matmul(v)), graph(A):matmul(graph(v)), "A:matmul(v)")
      same_bits(tp.eval((A:matmul(v) * 2):sum()), (graph(A):matmul(graph(v)) * 2):sum(), "(A v * 2):sum()")
      if mk[1] == mk[2] then
        same_bits(tp.eval(A:matmul(A:matmul(v) + 0)), graph(A):matmul(graph(A):matmul(graph(v)) + 0),
                  "a product of a sum of a product")
        same_bits(tp.eval(A:matmul(A:matmul(v))), graph(A):matmul(graph(A):matmul(graph(v))), "a product of a product")
      end
    end)
  end
end

test("a conjugate-gradient loop: the graph's iterates, bit for bit, and no nodes made", function()
  local n = 64
  local m = tp.randn({n, n}, {seed = 1})
  local A = tp.eval(m:matmul(m:t()) / n + tp.eye(n))
  local b = tp.eval(tp.randn({n}, {seed = 2}))
  local function cg(A, b, iters)
    local x = b * 0
    local r, p = b, b
    local rr = (r * r):sum():item()
    for _ = 1, iters do
      local Ap = A:matmul(p)
      local alpha = rr / math.max((p * Ap):sum():item(), 1e-30)
      x = tp.eval(x + alpha * p)
      r = tp.eval(r - alpha * Ap)
      local rr_new = (r * r):sum():item()
      p = tp.eval(r + (rr_new / math.max(rr, 1e-30)) * p)
      rr = rr_new
    end
    return x, rr
  end
  cg(A, b, 2)  -- the first iterations' plans and nodes
  local nodes = tp.stats().live_nodes
  local s0 = tp.stats()
  local x, rr = cg(A, b, 30)
  local s1 = tp.stats()
  if records then eq(s1.live_nodes, nodes, "live nodes after 30 recorded iterations") end
  if records then eq(s1.observations - s0.observations, 1 + 30 * 5, "observations: each item and eval once") end
  -- The same loop through the graph: every operation on a lazy + 0 of its operand.
  local function via_graph(t) return tp.zeros({1}) + t end
  local xg = tp.eval(b * 0)
  local rg, pg = b, b
  local rrg = (rg * rg):sum():item()
  for _ = 1, 30 do
    local Ap = A:matmul(via_graph(pg))
    local alpha = rrg / math.max((via_graph(pg) * Ap):sum():item(), 1e-30)
    xg = tp.eval(via_graph(xg) + alpha * pg)
    rg = tp.eval(via_graph(rg) - alpha * Ap)
    local rr_new = (via_graph(rg) * rg):sum():item()
    pg = tp.eval(via_graph(rg) + (rr_new / math.max(rrg, 1e-30)) * pg)
    rrg = rr_new
  end
  if exact then  -- (on several ranks the plans of the two may round differently, and CG amplifies it)
    eq(rr, rrg, "the residual")
    same_bits(x, xg, "the iterate")
  end
end)

test("errors name the operation and shapes, as the graph's", function()
  local a = inputs({4}, "f32", 20)
  local b = inputs({5}, "f32", 21)
  local A = tp.eval(tp.randn({3, 6}, {seed = 22}))
  for _, c in ipairs{
    {function(x, y) return x + y end},
    {function(x, y) return x * y end},
    {function(x) return A:matmul(x) end},
    {function(x) return x + "1" end},
    {function(x) return x:matmul(x) * x + A end},
  } do
    local ok1, e1 = pcall(c[1], a * 1, b * 1)
    local ok2, e2 = pcall(c[1], graph(a), graph(b))
    eq(ok1, false, "fails")
    eq(ok2, false, "fails on the graph")
    eq(e1, e2, "the same message")
  end
  local r = a * 2
  r:release()
  check.check_error(function() return r:sum() end, "released")
  check.check_error(function() return r + 1 end, "released")
end)

test("gradients, printing, names and shapes read through records", function()
  local w = inputs({5}, "f32", 30)
  local g = tp.grad((w * w * 0.5):sum(), {w})[1]
  local lw = graph(w)
  same_bits(tp.eval(g), tp.grad((lw * lw * 0.5):sum(), {lw})[1], "d/dw of sum(w * w / 2)")
  local y = w * 2 + 1
  eq(tostring(y), tostring(tp.eval(graph(w) * 2 + 1)), "printed")
  local y2 = w * 3
  eq(y2.shape, {5})
  eq(y2.dtype, "f32")
  eq(y2:numel(), 5)
  eq(#y2, 5)
  tp.env.rec = w * 3
  same_bits(tp.env.rec, graph(w) * 3, "bound to a name")
  tp.env.rec = nil
  -- A chain longer than records go (64 uncomputed): the rest is built as nodes.
  local z = w
  for _ = 1, 200 do z = z * 1.001 + 0.5 end
  local lz = graph(w)
  for _ = 1, 200 do lz = lz * 1.001 + 0.5 end
  same_bits(tp.eval(z), lz, "a chain of 400 operations")
end)

local OPS = {"+", "-", "*", "/"}

-- Random expressions of + - * /, numbers, sums and products with a matrix, some parts observed
-- on the way (so records read computed and uncomputed records, and nodes): each built twice,
-- on computed inputs and on lazy ones, to the same bits.
test("random expressions against the graph", function()
  math.randomseed(20261128)
  for _, dtype in ipairs{"f32", "f64"} do
    local n = 24
    local leaves = {}
    for i = 1, 3 do leaves[i] = inputs({n}, dtype, 50 + i) end
    local M = inputs({n, n}, dtype, 60)
    for _ = 1, 150 do
      -- One random recipe, replayed on both sets of inputs.
      local function draw(depth)
        local k = math.random(depth >= 5 and 2 or 9)
        if k == 1 then return {"leaf", math.random(3)} end
        if k == 2 then return {"leaf", math.random(3)} end
        if k == 3 then return {"matmul", draw(depth + 1)} end
        if k == 4 then return {"eval", draw(depth + 1)} end
        if k == 5 then return {"number", math.random(2) == 1 and math.random(-3, 3) or (math.random() - 0.5) * 4,
                               math.random(2) == 1, OPS[math.random(4)], draw(depth + 1)} end
        return {OPS[math.random(4)], draw(depth + 1), draw(depth + 1)}
      end
      local recipe = draw(0)
      -- (The graph's side observes nothing on the way: nothing there is ever computed.)
      local function build(r, ls, m, observe)
        local op = r[1]
        if op == "leaf" then return observe and ls[r[2]] or graph(ls[r[2]]) end
        if op == "matmul" then return (observe and m or graph(m)):matmul(build(r[2], ls, m, observe)) end
        if op == "eval" then
          local x = build(r[2], ls, m, observe)
          return observe and tp.eval(x) or x
        end
        if op == "number" then
          local x, num, left, o = build(r[5], ls, m, observe), r[2], r[3], r[4]
          local a, b = x, num
          if left then a, b = num, x end
          if o == "+" then return a + b elseif o == "-" then return a - b elseif o == "*" then return a * b end
          return a / b
        end
        local a, b = build(r[2], ls, m, observe), build(r[3], ls, m, observe)
        if op == "+" then return a + b elseif op == "-" then return a - b elseif op == "*" then return a * b end
        return a / b
      end
      local got = build(recipe, leaves, M, true)
      local want = build(recipe, leaves, M, false)
      check.truthy(lazy(want), "the graph's side is a node")
      local sum_got, sum_want = got:sum(), want:sum()
      same_bits(tp.eval(got), want, "expression")
      same_bits(tp.eval(sum_got), sum_want, "its sum")
    end
  end
end)

test("no records while a trace is written (it shows the engine's kernels)", function()
  local a = inputs({8}, "f32", 70)
  if records then check.truthy(not lazy(a), "a record before the trace") end
  local path = os.tmpname()
  tp.trace(path)
  check.truthy(lazy(a), "a node while tracing")
  eq((a * 2):sum():item(), (graph(a) * 2):sum():item(), "the value")
  tp.trace(nil)
  os.remove(path)
  if records then check.truthy(not lazy(a), "records again after it") end
end)

test("a long loop keeps memory bounded", function()
  local u = tp.eval(tp.rand({4096}, {seed = 40}))
  for _ = 1, 3000 do u = tp.eval(u * 0.5 + 1) end
  collectgarbage()
  collectgarbage()
  check.truthy(tp.stats().bytes_live < 8 * 1024 * 1024, "bytes live: " .. tp.stats().bytes_live)
  check.truthy(math.abs(u[1]:item() - 2) < 1e-5, "converged to 2")
end)

check.summary()
