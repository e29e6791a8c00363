-- tapestry.linalg against numpy.linalg: the expected values below are numpy 1.24's for the same
-- inputs (printed by the snippet at the end); factorizations are also checked by identities, and
-- gradients by finite differences. Runs on 1 rank, 3 virtual ranks and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local gradcheck = require "gradcheck"
local linalg = require "tapestry.linalg"
local test, eq, near = check.test, check.eq, check.near

local function f64(t) return tp.tensor(t, {dtype = "f64"}) end
local A = f64{{4, 1, 2}, {1, 5, 3}, {2, 3, 6}}
local B = f64{{1, 2}, {2, 0}, {3, 1}}
local C = f64{{2, -1, 0.5}, {1, 3, 2}, {0, 1, 4}, {1, 1, 1}}  -- 4x3
local AB = tp.stack({A, A + tp.eye(3, {dtype = "f64"}), A * 2})

-- numpy.linalg on A, B, C, AB
local solve = {{1.3877787807814457e-17, 0.5}, {0.14285714285714285, -0.14285714285714282}, {0.42857142857142855, 0.07142857142857141}}
local solve_vec = {-1.3877787807814457e-17, 0.14285714285714285, 0.4285714285714286}
local inv = {{0.3, 0.0, -0.1}, {0.0, 0.2857142857142857, -0.14285714285714282}, {-0.1, -0.14285714285714285, 0.2714285714285714}}
local det_batch = {69.99999999999996, 146.0, 559.9999999999999}
local slogdet = {-1.0, 2.1972245773362196}
local cholesky = {{2.0, 0.0, 0.0}, {0.5, 2.179449471770337, 0.0}, {1.0, 1.1470786693528088, 1.9194297398747862}}
local svals = {5.381327291083021, 2.376223030324085, 2.1551985283037114}
local eigvals_batch = {{2.194397167422409, 3.3867701566075485, 9.418832675970037}, {3.1943971674224083, 4.38677015660755, 10.418832675970041}, {4.388794334844818, 6.773540313215097, 18.837665351940075}}
local pinv = {{0.3640552995391706, 0.11751152073732718, -0.1428571428571428, 0.15437788018433182}, {-0.18433179723502305, 0.29493087557603687, -0.14285714285714296, 0.07373271889400924}, {0.0460829493087558, -0.07373271889400922, 0.2857142857142858, -0.018433179723502297}}
local norms = {5.381327291083021, 2.1551985283037114, 9.912748849710818, 7.5, 4.0, 6.0, 3.0, 6.264982043070834}
local vnorms = {3.0, 8.0, 4.514357435474001, 0.0, 4.0, 0.0}
local lstsq = {x = {0.7880184331797236, 0.27188940092165903, 0.6820276497695857}, res = {6.451612903225809}, rank = 3}

local TOL = 1e-12

test("linalg.values_as_numpy", function()
  near(linalg.solve(A, B):totable(), solve, TOL)
  near(linalg.solve(A, B[{{}, 1}]):totable(), solve_vec, TOL, "a 1-D b")
  near(linalg.inv(A):totable(), inv, TOL)
  near(linalg.det(AB):totable(), det_batch, TOL, "batched det")
  local s, l = linalg.slogdet(f64{{0, 3}, {3, 0}})
  near({s:item(), l:item()}, slogdet, TOL)
  near(linalg.cholesky(A):totable(), cholesky, TOL)
  near(linalg.svd(C, {compute_uv = false}):totable(), svals, TOL)
  near(linalg.eigvalsh(AB):totable(), eigvals_batch, TOL, "batched eigvalsh")
  near(linalg.pinv(C):totable(), pinv, TOL)
  local got = {}
  for i, p in ipairs{2, -2, "nuc", 1, -1, math.huge, -math.huge, "fro"} do got[i] = linalg.norm(C, p):item() end
  near(got, norms, TOL, "matrix norms")
  local v = f64{3, -4, 0, 1}
  got = {}
  for i, p in ipairs{0, 1, 3, -math.huge, math.huge, -1} do got[i] = linalg.norm(v, p):item() end
  near(got, vnorms, TOL, "vector norms")
  local x, res, rank = linalg.lstsq(C, f64{1, 2, 3, 4})
  near(x:totable(), lstsq.x, TOL)
  near(res:totable(), lstsq.res, 1e-10)
  eq({rank:item(), rank.dtype}, {lstsq.rank, "i64"})
end)

test("linalg.integers_and_f32", function()
  local ai = tp.tensor({{4, 1, 2}, {1, 5, 3}, {2, 3, 6}}, {dtype = "i32"})
  eq(linalg.inv(ai).dtype, "f64", "integers compute in f64, as numpy")
  near(linalg.inv(ai):totable(), inv, TOL)
  local a32 = A:cast("f32")
  eq(linalg.cholesky(a32).dtype, "f32")
  near(linalg.cholesky(a32):totable(), cholesky, 1e-6)
  near(linalg.det(a32):item(), 70, 1e-5)
  eq(linalg.solve(a32, B).dtype, "f64", "promoted as numpy")
end)

-- Factorizations by their defining identities, batched, on a batch the planner may split.
test("linalg.identities_batched", function()
  local X = tp.rand({6, 5, 3}, {seed = 7, dtype = "f64"}) - 0.5
  local q, r = linalg.qr(X)
  eq(q.shape, {6, 5, 3}); eq(r.shape, {6, 3, 3})
  near(q:matmul(r):totable(), X:totable(), 1e-12, "q r = a")
  near(q:transpose(-2, -1):matmul(q):totable(), tp.eye(3, {dtype = "f64"}):expand({6, 3, 3}):totable(), 1e-12)
  near(r:totable(), (r * tp.tensor({{1, 1, 1}, {0, 1, 1}, {0, 0, 1}})):totable(), 0, "r is upper triangular")
  local qc, rc = linalg.qr(X, "complete")
  eq({qc.shape, rc.shape}, {{6, 5, 5}, {6, 5, 3}})
  near(qc:matmul(rc):totable(), X:totable(), 1e-12, "complete q r = a")
  local u, s, vh = linalg.svd(X)
  eq({u.shape, s.shape, vh.shape}, {{6, 5, 5}, {6, 3}, {6, 3, 3}})
  local ur, sr, vhr = linalg.svd(X, {full_matrices = false})
  eq(ur.shape, {6, 5, 3})
  near((ur * sr:unsqueeze(-2)):matmul(vhr):totable(), X:totable(), 1e-12, "u s vh = a")
  near(u[{{}, {}, {1, 3}}]:abs():totable(), ur:abs():totable(), 1e-12, "full u extends the reduced one")
  local S = X:transpose(-2, -1):matmul(X)  -- symmetric, {6, 3, 3}
  local w, v = linalg.eigh(S)
  near(S:matmul(v):totable(), (v * w:unsqueeze(-2)):totable(), 1e-12, "a v = v diag(w)")
  local Sp = S + tp.eye(3, {dtype = "f64"})
  local l = linalg.cholesky(Sp)
  near(l:matmul(l:transpose(-2, -1)):totable(), Sp:totable(), 1e-12, "l l^T = a")
  local rhs = tp.rand({6, 3, 2}, {seed = 8, dtype = "f64"})
  near(Sp:matmul(linalg.solve(Sp, rhs)):totable(), rhs:totable(), 1e-12, "a solve(a, b) = b")
  eq(linalg.solve(Sp, tp.tensor({1, 2, 3}, {dtype = "f64"})).shape, {6, 3}, "a vector b is shared by the batch")
  local sign, logdet = linalg.slogdet(Sp)
  near((sign * logdet:exp()):totable(), linalg.det(Sp):totable(), 1e-10, "slogdet agrees with det")
  near(linalg.pinv(X):matmul(X):totable(), tp.eye(3, {dtype = "f64"}):expand({6, 3, 3}):totable(), 1e-12,
       "pinv(a) a = I for full column rank")
end)

test("linalg.gradients", function()
  local function spd(x) return x:matmul(x:transpose(-2, -1)) + tp.eye(3, {dtype = "f64"}) * 3 end
  gradcheck.check("solve", function(a, b) return linalg.solve(a + tp.eye(3, {dtype = "f64"}) * 4, b) end, {{3, 3}, {3, 2}})
  gradcheck.check("solve.vector", function(a, b) return linalg.solve(spd(a), b) end, {{3, 3}, {3}})
  gradcheck.check("inv.batched", function(a) return linalg.inv(spd(a)) end, {{2, 3, 3}})
  gradcheck.check("det", function(a) return linalg.det(a) end, {{2, 3, 3}})
  gradcheck.check("slogdet", function(a) local _, l = linalg.slogdet(spd(a)) return l end, {{3, 3}})
  gradcheck.check("cholesky", function(a) return linalg.cholesky(spd(a)) end, {{2, 3, 3}})
  -- eigh and svd as torch: sign-free functions of the vectors (a column's sign is arbitrary).
  local function sym(x) return (x + x:transpose(-2, -1)) * 0.5 end
  gradcheck.check("eigvalsh", function(a) return linalg.eigvalsh(sym(a)) end, {{2, 4, 4}})
  gradcheck.check("eigh.w", function(a) return (linalg.eigh(sym(a))) end, {{4, 4}})
  gradcheck.check("eigh.v", function(a) local _, v = linalg.eigh(sym(a)) return v:square() end, {{2, 4, 4}})
  gradcheck.check("svdvals", function(a) return linalg.svd(a, {compute_uv = false}) end, {{2, 3, 5}})
  -- pinv and lstsq are compositions of the SVD (stdlib/linalg.lua): their gradients come through
  -- it, as torch's (full rank, distinct singular values).
  gradcheck.check("pinv", function(a) return linalg.pinv(a) end, {{4, 3}})
  gradcheck.check("pinv.batched.wide", function(a) return linalg.pinv(a) end, {{2, 2, 3}})
  gradcheck.check("lstsq.x", function(a, b) return (linalg.lstsq(a, b)) end, {{5, 3}, {5, 2}})
  gradcheck.check("lstsq.residual", function(a, b) return select(2, linalg.lstsq(a, b)) end, {{5, 3}, {5}})
  for _, sh in ipairs({{4, 4}, {5, 3}, {3, 5}}) do
    local k = math.min(sh[1], sh[2])
    for _, full in ipairs({false, true}) do
      local name, o = ("svd.%dx%d.%s"):format(sh[1], sh[2], full and "full" or "reduced"), {full_matrices = full}
      gradcheck.check(name .. ".s", function(a) return select(2, linalg.svd(a, o)) end, {sh})
      gradcheck.check(name .. ".u", function(a) return linalg.svd(a, o):narrow(-1, 1, k):square() end, {sh})
      gradcheck.check(name .. ".vh", function(a) return select(3, linalg.svd(a, o)):narrow(-2, 1, k):square() end, {sh})
    end
  end
  -- Repeated eigenvalues (the identity): through w or S alone the gradient is still exact.
  local I = tp.detach(tp.eye(3, {dtype = "f64"}))
  eq(tp.grad(linalg.eigvalsh(I):sum(), {I})[1]:totable(), I:totable())
  eq(tp.grad(linalg.svd(I, {compute_uv = false}):sum(), {I})[1]:totable(), I:totable())
  check.check_error(function() return tp.grad(linalg.qr(A):sum(), {A}) end, "tp.grad",
                    "linalg.qr has no gradient yet")
end)

test("linalg.bad_inputs", function()
  check.check_error(function() return linalg.solve(C, B) end, "tp.linalg.solve", "a must be square", "{4,3}")
  check.check_error(function() return linalg.solve(A, f64{1, 2}) end, "tp.linalg.solve", "b must have 3 rows",
                    "{3,3}", "{2}")
  check.check_error(function() return linalg.solve(AB, tp.zeros({2, 3, 1})) end, "tp.linalg.solve",
                    "do not broadcast", "{3,3,3}", "{2,3,1}")
  check.check_error(function() return linalg.det(f64{1, 2}) end, "tp.linalg.det", "at least 2 dims", "{2}")
  check.check_error(function() return linalg.cholesky(C) end, "tp.linalg.cholesky", "square", "{4,3}")
  check.check_error(function() return linalg.qr(C, "r") end, "tp.linalg.qr", "'reduced' or 'complete'")
  check.check_error(function() return linalg.svd(C, {full = true}) end, "tp.linalg.svd", "full")
  check.check_error(function() return linalg.eigh(C) end, "tp.linalg.eigh", "square")
  check.check_error(function() return linalg.norm(C, 3) end, "tapestry.linalg.norm", "{4,3}", "got 3")
  check.check_error(function() return linalg.lstsq(C, f64{1, 2}) end, "tapestry.linalg.lstsq", "{4}", "{2}")
  -- Singular or indefinite matrices are known only once computed: an error then, not a crash.
  local singular = f64{{1, 2}, {2, 4}}
  check.check_error(function() return linalg.solve(singular, f64{1, 1}):totable() end, "linalg.solve",
                    "singular", "matrix 1")
  check.check_error(function() return linalg.cholesky(f64{{1, 2}, {2, 1}}):totable() end, "linalg.cholesky",
                    "not positive definite")
  eq(linalg.det(singular):item(), 0)
  local s, l = linalg.slogdet(singular)
  eq({s:item(), l:item()}, {0, -math.huge})
  near(linalg.inv(A):totable(), inv, TOL, "the session goes on")
end)

check.summary()

--[==[ numpy snippet for the values above:
import numpy as np; L = np.linalg
a = np.array([[4,1,2],[1,5,3],[2,3,6.]]); b = np.array([[1,2],[2,0],[3,1.]])
c = np.array([[2,-1,0.5],[1,3,2],[0,1,4],[1,1,1.]]); ab = np.stack([a, a+np.eye(3), 2*a])
L.solve(a,b); L.solve(a,b[:,0]); L.inv(a); L.det(ab); L.slogdet(3*np.array([[0,1],[1,0.]]))
L.cholesky(a); L.svd(c,compute_uv=False); L.eigvalsh(ab); L.pinv(c)
[L.norm(c,o) for o in [2,-2,'nuc',1,-1,np.inf,-np.inf,'fro']]
[L.norm(np.array([3,-4,0,1.]),o) for o in [0,1,3,-np.inf,np.inf,-1]]
L.lstsq(c, np.array([1,2,3,4.]), rcond=None)
]==]
