-- tapestry.linalg: CG on random SPD systems, power iteration on known spectra, norms.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local linalg = require "tapestry.linalg"
local fem = require "tapestry.fem"
local test, eq, near = check.test, check.eq, check.near

local function spd(n, seed)
  local m = tp.randn({n, n}, {seed = seed, dtype = "f64"})
  return m:matmul(m:t()) / n + tp.eye(n, {dtype = "f64"})   -- eigenvalues >= 1: well conditioned
end

test("linalg.cg.random_spd", function()
  local n = 40
  local a = spd(n, 31)
  local xs = tp.randn({n}, {seed = 32, dtype = "f64"})
  local b = tp.eval(a:matmul(xs))
  local x, iters, history = linalg.cg(a, b)
  check.truthy(iters >= 1 and iters <= n, "iterations " .. iters)
  eq(#history, iters + 1)
  check.truthy(history[#history] <= 1e-6, "converged residual " .. history[#history])
  near(history[1], 1, 1e-12, "starts from x = 0")
  local rel = (b - a:matmul(x)):norm():item() / b:norm():item()
  check.truthy(rel <= 1e-6, "true residual " .. rel)
  local x2 = linalg.cg(a, b, {tol = 1e-12})
  near(x2:totable(), xs:totable(), 1e-9, "tight tolerance recovers x")
  local x3, it3 = linalg.cg(a, b, {x0 = x2, tol = 1e-8})
  eq(it3, 0, "a converged x0 needs no iteration")
  near(x3:totable(), x2:totable(), 0)
  local _, it4 = linalg.cg(a, b, {maxiter = 2, tol = 1e-14})
  eq(it4, 2)
end)

test("linalg.cg.matrix_free", function()
  -- -laplacian with a zero boundary is SPD: solve it on a 2-D grid without forming the matrix.
  local u = tp.rand({10, 12}, {seed = 33, dtype = "f64"})
  local op = function(v) return -fem.laplacian(v) end
  local b = tp.eval(op(u))
  local x, iters = linalg.cg(op, b, {tol = 1e-10})
  check.truthy(iters <= 120, "iterations " .. iters)
  near(x:totable(), u:totable(), 1e-7)
end)

test("linalg.cg.zero_rhs", function()
  local x, iters = linalg.cg(spd(5, 34), tp.zeros({5}, {dtype = "f64"}))
  eq(iters, 0)
  eq(x:abs():max():item(), 0)
end)

test("linalg.power_iteration", function()
  local lambda, v, iters = linalg.power_iteration(tp.tensor({{1, 0, 0, 0, 0}, {0, 2, 0, 0, 0},
    {0, 0, 3, 0, 0}, {0, 0, 0, 4, 0}, {0, 0, 0, 0, 5}}, {dtype = "f64"}), {tol = 1e-12})
  near(lambda, 5, 1e-9, "diag(1..5)")
  check.truthy(iters > 1, "iterations " .. iters)
  near(math.abs(v:totable()[5]), 1, 1e-5, "eigenvector e5")
  near(v:norm():item(), 1, 1e-12, "unit vector")
  -- a symmetric matrix with a known top eigenvalue: Q diag Q^T with Q from a reflection
  local n = 8
  local h = tp.randn({n}, {seed = 41, dtype = "f64"})
  h = h / h:norm()
  local q = tp.eye(n, {dtype = "f64"}) - 2 * tp.outer(h, h)
  local d = tp.arange(1, n, {dtype = "f64"})
  local a = (q * d):matmul(q:t())
  local l2 = linalg.power_iteration(a, {tol = 1e-12, maxiter = 2000})
  near(l2, n, 1e-8, "Q diag(1..8) Q^T")
  -- a negative dominant eigenvalue keeps its sign
  local l3 = linalg.power_iteration(tp.tensor({{-3, 0}, {0, 1}}, {dtype = "f64"}), {tol = 1e-12})
  near(l3, -3, 1e-9, "negative")
  -- f32 works too, to f32 precision
  near(linalg.power_iteration(tp.tensor{{2, 1}, {1, 2}}), 3, 1e-5, "f32 {{2,1},{1,2}}")
end)

test("linalg.norm", function()
  local x = tp.tensor({3, -4}, {dtype = "f64"})
  near(linalg.norm(x):item(), 5, 1e-15)
  near(linalg.norm(x, 1):item(), 7, 1e-15)
  near(linalg.norm(x, math.huge):item(), 4, 1e-15)
  near(linalg.norm(x, "inf"):item(), 4, 1e-15)
  near(linalg.norm(x, 3):item(), (27 + 64) ^ (1 / 3), 1e-12)
  near(linalg.norm(tp.tensor{{1, 2}, {2, 4}}, "fro"):item(), 5, 1e-6, "Frobenius")
  eq(linalg.norm(tp.zeros{3}):item(), 0, "all zeros is 0, not nan")
  near(linalg.norm(tp.tensor{3e20, 4e20}):item(), 5e20, 1e-6, "f32 past sqrt(max) does not overflow")
  near(linalg.norm(tp.tensor({3, 4}, {dtype = "i32"})):item(), 5, 1e-12, "integers")
end)

check.summary()
