-- The largest eigenvalue of a matrix whose spectrum is known in closed form, by power
-- iteration (tapestry.linalg). Run it with:  tapestry scripts/power_iteration.lua
local linalg = require "tapestry.linalg"

-- A[i][j] = min(i, j): the covariance of a random walk. Its eigenvalues are
--   lambda_k = 1 / (4 sin^2((2k - 1) pi / (4n + 2))),  k = 1..n,
-- so the largest is lambda_1 and the next is about lambda_1 / 9: power iteration gains a
-- factor of ~9 per step on the vector (81 on the eigenvalue).
local n = 100
local i = tp.arange(1, n, {dtype = "f64"})
local a = tp.eval(tp.minimum(i:unsqueeze(2), i:unsqueeze(1)))
local exact = 1 / (4 * math.sin(math.pi / (4 * n + 2)) ^ 2)  -- eigenvector sin(j pi / (2n + 1))
local second = 1 / (4 * math.sin(3 * math.pi / (4 * n + 2)) ^ 2)

local t0 = tp.clock()
local lambda, v, iters = linalg.power_iteration(a, {tol = 1e-12})
local elapsed = tp.clock() - t0
print(string.format("A = min(i, j), n = %d", n))
print(string.format("power iteration: lambda = %.10f after %d iterations (%.1f ms)", lambda, iters,
                    elapsed * 1e3))
-- At rounding level the digits depend on the summation order (the ranks' split): not printed.
local rel = math.abs(lambda - exact) / exact
print(string.format("exact:           lambda = %.10f   relative error %s", exact,
                    rel < 1e-13 and "< 1e-13" or string.format("%.1e", rel)))
print(string.format("ratio lambda_2 / lambda_1 = %.4f: the error shrinks ~%.0fx per step",
                    second / exact, (exact / second) ^ 2))
-- The eigenvector: A v = lambda v up to the tolerance.
local resid = (a:matmul(v) - v * lambda):norm():item() / lambda
print(string.format("eigenvector residual ||A v - lambda v|| / lambda = %.1e", resid))
print("first entries of v (exactly sin(j pi / (2n + 1)), normalized):")
print(v[{{1, 6}}])
