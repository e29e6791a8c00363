-- x:constrain(tp.replicated()): a named tensor with a whole copy on every rank, read locally by
-- later plans, with the values of the unconstrained expression; a bad layout is refused.
local ranks = tp.mesh().ranks
tp.env.w = tp.rand({64, 64}, {seed = 2}):constrain(tp.replicated())
local where = tostring(tp.env.w:layout())
if ranks > 1 then
  assert(where == ("replicated on %d ranks"):format(ranks), where)
end
local x = tp.rand({256, 64}, {seed = 1}):constrain(tp.split(1))
local got = x:matmul(tp.env.w):sum():item()
local want = tp.rand({256, 64}, {seed = 1}):matmul(tp.rand({64, 64}, {seed = 2})):sum():item()
assert(math.abs(got - want) <= 1e-4 * math.abs(want), ("%g vs %g"):format(got, want))
-- A plan on a modelled mesh: every rank computes the replica, nothing moves for it.
local p = tp.plan(x:matmul(tp.rand({64, 64}, {seed = 3}):constrain(tp.replicated())), {mesh = 8})
assert(tostring(p):find("constrain #%d+ {64,64} f32: replicated"), tostring(p))
local ok, err = pcall(function() return tp.ones{2}:constrain("replicated") end)
assert(not ok and err:find("layout", 1, true), err)
print("ok")
