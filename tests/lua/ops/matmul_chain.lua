-- Matmul chains are computed in the order the planner's cost picks, whatever the parentheses
-- (engine/plan/reassociate.hpp, docs/planner.md "Matmul chains"): the same values to rounding,
-- the cheap order's flops, on the session's mesh (1 rank, virtual ranks or mpirun) and on
-- modelled ones; a constrain on a product, or search = {reassociate = false}, keeps them.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, same, truthy, eq = check.test, check.same, check.truthy, check.eq

-- (a b) c makes a 1024x1024 product (34 MFLOP); a (b c) an 8x8 one (0.26 MFLOP).
local a, ra = gen.pair({1024, 8}, "f64", 11, -1, 1)
local b, rb = gen.pair({8, 1024}, "f64", 12, -1, 1)
local c, rc = gen.pair({1024, 8}, "f64", 13, -1, 1)
local want = ref.matmul(ra, ref.matmul(rb, rc))
local TOL = 1e-10  -- f64: the orders round differently, by far less than this

test("chain.plan_picks_the_cheap_order", function()
  for _, mesh in ipairs{false, 8, 64} do  -- false: the session's own mesh
    local opts = mesh and {mesh = mesh} or nil
    local left = tp.plan(a:matmul(b):matmul(c), opts)
    local right = tp.plan(a:matmul(b:matmul(c)), opts)
    local kept = tp.plan(a:matmul(b):matmul(c), {mesh = mesh or nil, search = {reassociate = false}})
    eq(left:cost().flops, right:cost().flops, "either parentheses, mesh " .. tostring(mesh))
    truthy(kept:cost().flops > 100 * left:cost().flops,
           ("written order %g flops, chosen %g"):format(kept:cost().flops, left:cost().flops))
    truthy(left:cost().time < kept:cost().time, "the cheap order is faster")
    truthy(tostring(left):find("written ((x1 x2) x3), computed as (x1 (x2 x3))", 1, true), tostring(left))
    truthy(tostring(right):find("written (x1 (x2 x3)), computed as (x1 (x2 x3))", 1, true), tostring(right))
  end
end)

test("chain.values", function()
  same(a:matmul(b):matmul(c), want, TOL, "(a b) c")
  same(a:matmul(b:matmul(c)), want, TOL, "a (b c)")
  same(tp.matmul(tp.matmul(a, b), c) * 2, ref.binary("mul", want, 2), TOL, "a product read by a map")
end)

test("chain.constrain_keeps_the_parentheses", function()
  local ab = a:matmul(b):constrain(tp.split(1))
  local kept = tp.plan(ab:matmul(c))
  local free = tp.plan(a:matmul(b):matmul(c))
  truthy(kept:cost().flops > 100 * free:cost().flops, "a constrained product is computed as written")
  same(ab:matmul(c), want, TOL, "(a b):constrain(...) c")
end)

test("chain.batched_broadcast_weights", function()
  -- x{3,256,4} w1{4,256} w2{256,4}: w1 w2 is one 4x4 product, broadcast over the batch.
  local x, rx = gen.pair({3, 256, 4}, "f64", 21, -1, 1)
  local w1, rw1 = gen.pair({4, 256}, "f64", 22, -1, 1)
  local w2, rw2 = gen.pair({256, 4}, "f64", 23, -1, 1)
  local p = tp.plan(x:matmul(w1):matmul(w2), {mesh = 8})  -- planned before it holds a value
  truthy(tostring(p):find("computed as (x1 (x2 x3))", 1, true), tostring(p))
  same(x:matmul(w1):matmul(w2), ref.matmul(rx, ref.matmul(rw1, rw2)), TOL, "(x w1) w2")
end)

test("chain.transposed_operand_and_longer_chains", function()
  local d, rd = gen.pair({1024, 8}, "f64", 14, -1, 1)
  local e, re = gen.pair({1024, 4}, "f64", 15, -1, 1)
  -- a d^T c: the transposed operand is an operand like any other.
  same(a:matmul(d:t()):matmul(c), ref.matmul(ra, ref.matmul(ref.transpose(rd, 1, 2), rc)), TOL, "a d^T c")
  -- Five operands, written left to right: 14 orders.
  local p = tp.plan(a:matmul(b):matmul(c):matmul(b):matmul(e), {mesh = 8})
  local kept = tp.plan(a:matmul(b):matmul(c):matmul(b):matmul(e), {mesh = 8, search = {reassociate = false}})
  truthy(kept:cost().flops > 50 * p:cost().flops, "five operands")
  local rfive = ref.matmul(ra, ref.matmul(ref.matmul(rb, rc), ref.matmul(rb, re)))
  same(a:matmul(b):matmul(c):matmul(b):matmul(e), rfive, TOL, "((((a b) c) b) e)")
end)

test("chain.gradients", function()
  local w, rw = gen.pair({1024, 8}, "f64", 16, -1, 1)
  local loss = (a:matmul(b):matmul(c) * w):sum()
  local g = tp.grad(loss, {a, b, c})
  local t = function(x) return ref.transpose(x, 1, 2) end
  same(g[1], ref.matmul(rw, t(ref.matmul(rb, rc))), TOL, "d loss / d a = w (b c)^T")
  same(g[2], ref.matmul(ref.matmul(t(ra), rw), t(rc)), TOL, "d loss / d b = a^T w c^T")
  same(g[3], ref.matmul(t(rb), ref.matmul(t(ra), rw)), TOL, "d loss / d c = (a b)^T w")
end)

check.summary()
