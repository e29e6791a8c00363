-- Conjugate gradients with tapestry.linalg: a dense SPD system, then a matrix-free Poisson
-- problem whose "matrix" is fem.laplacian. Run it with:  tapestry scripts/cg.lua
local linalg = require "tapestry.linalg"
local fem = require "tapestry.fem"

-- 1. A dense symmetric positive definite system A x = b with a known answer.
local n = 200
local m = tp.randn({n, n}, {seed = 1, dtype = "f64"})
local a = tp.eval(m:matmul(m:t()) / n + tp.eye(n, {dtype = "f64"}) * 0.5)  -- eigenvalues >= 0.5
local x_true = tp.randn({n}, {seed = 2, dtype = "f64"})
local b = tp.eval(a:matmul(x_true))

local t0 = tp.clock()
local x, iters, history = linalg.cg(a, b, {tol = 1e-10})
local elapsed = tp.clock() - t0
print(string.format("Dense SPD system, n = %d: CG converged in %d iterations (%.0f ms)", n, iters,
                    elapsed * 1e3))
for k = 1, #history, 10 do
  print(string.format("  iteration %3d   relative residual %.3e", k - 1, history[k]))
end
local residual = linalg.norm(b - a:matmul(x)):item() / linalg.norm(b):item()
print(string.format("converged residual ||b - A x|| / ||b|| = %.3e (tol 1e-10)", residual))
print(string.format("error against the known solution: max |x - x_true| = %.3e",
                    (x - x_true):abs():max():item()))

-- 2. Matrix-free: -laplacian(u) = f on a 48 x 48 grid (u = 0 outside). CG only needs the
-- operator v -> A v, so the 2304 x 2304 matrix is never formed; each product is a stencil.
local g = 48
local u_true = tp.eval((tp.linspace(0, math.pi, g, {dtype = "f64"}):sin():unsqueeze(2) *
                        tp.linspace(0, 2 * math.pi, g, {dtype = "f64"}):cos():unsqueeze(1)))
local poisson = function(v) return -fem.laplacian(v) end
local f = tp.eval(poisson(u_true))
local u, k, hist = linalg.cg(poisson, f, {tol = 1e-8})
print(string.format("\nPoisson on a %d x %d grid, matrix-free: %d iterations, residual %.2e, "
                    .. "max error %.2e", g, g, k, hist[#hist], (u - u_true):abs():max():item()))
