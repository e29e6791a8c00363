-- tapestry.linalg: iterative solvers and norms over tp's lazy ops.
--   local linalg = require "tapestry.linalg"
--   local x, iters = linalg.cg(a, b, {tol = 1e-8})
--   local lambda, v = linalg.power_iteration(a)
-- The solvers are Lua loops that build one small graph per step and observe one scalar
-- (tp.eval keeps each graph small; :item() decides whether to stop), so the matrix-vector
-- products are planned and sharded like any other expression.
local tp = require "tapestry"
local args = require "tapestry.args"

local linalg = {}
local shape_str = args.shape_str

local function dot(u, v) return (u * v):sum() end

-- The entrywise p-norm of all of x (a matrix gives the Frobenius norm for p = 2, not the
-- spectral norm). p: a positive number (default 2), math.huge or "inf" for max |x|, "fro" = 2.
-- p = 2 scales by max |x| first, as LAPACK's nrm2, so f32 values near 1e20 do not overflow.
function linalg.norm(x, p)
  local fname = "tapestry.linalg.norm"
  args.tensor(fname, "x", x)
  if p == nil or p == "fro" then
    p = 2
  elseif p == "inf" then
    p = math.huge
  elseif type(p) ~= "number" or not (p > 0) then
    args.fail(fname, "p must be a positive number, math.huge, 'inf' or 'fro', got %s", tostring(p))
  end
  if p ~= 2 then return x:norm(p) end
  local scale = x:abs():max()
  if x.dtype ~= "f32" and x.dtype ~= "f64" then scale = scale:cast("f64") end
  local safe = tp.where(scale:eq(0), 1, scale)  -- an all-zero x has norm 0, not 0/0
  return (x / safe):square():sum():sqrt() * scale
end

-- The operator of a solver: a square matrix (applied with matmul) or a Lua function v -> A v
-- (matrix-free, e.g. function(v) return -fem.laplacian(v) end). Returns apply, n.
local function operator(fname, a, n)
  if type(a) == "function" then return a, n end
  args.dims(fname, "a", a, 2)
  if a:size(1) ~= a:size(2) then args.fail(fname, "a must be square, got %s", shape_str(a.shape)) end
  return function(v) return a:matmul(v) end, a:size(1)
end

-- Conjugate gradients for A x = b, A symmetric positive definite (a matrix, or a function
-- v -> A v with v of b's shape). opts.tol (default 1e-6): stop when ||r|| <= tol * ||b||;
-- opts.maxiter (default: the number of unknowns; CG is exact in n steps in exact arithmetic);
-- opts.x0 (default zeros). Returns x, the iterations done, and the history of relative
-- residuals (history[1] is the initial one). One scalar is observed per iteration.
function linalg.cg(a, b, opts)
  local fname = "tapestry.linalg.cg"
  args.min_dims(fname, "b", b, 1)
  opts = args.opts(fname, opts, {"tol", "maxiter", "x0"})
  local apply, n = operator(fname, a, b:numel())
  if type(a) ~= "function" and (b:dim() ~= 1 or b:size(1) ~= n) then
    args.fail(fname, "b must be {%d} to match a %s, got %s", n, shape_str(a.shape), shape_str(b.shape))
  end
  local tol = args.positive(fname, "opts.tol", opts.tol, 1e-6)
  local maxiter = args.count(fname, "opts.maxiter", opts.maxiter, n)
  local x = opts.x0
  if x ~= nil then
    args.tensor(fname, "opts.x0", x)
    if shape_str(x.shape) ~= shape_str(b.shape) then
      args.fail(fname, "opts.x0 must have b's shape %s, got %s", shape_str(b.shape), shape_str(x.shape))
    end
  end

  local bnorm = tp.eval(b):norm():item()
  if bnorm == 0 then return tp.zeros(b.shape, {dtype = b.dtype}), 0, {0} end
  local r
  if x == nil then
    x, r = tp.zeros(b.shape, {dtype = b.dtype}), b
  else
    x, r = tp.eval(x, b - apply(x))
  end
  local p, rs = r, tp.eval(dot(r, r))
  local history = {math.sqrt(rs:item()) / bnorm}
  local k = 0
  while history[#history] > tol and k < maxiter do
    k = k + 1
    local ap = apply(p)
    local alpha = rs / dot(p, ap)
    local r_new = r - alpha * ap
    local rs_new
    x, r, rs_new = tp.eval(x + alpha * p, r_new, dot(r_new, r_new))
    local rsv = rs_new:item()
    history[#history + 1] = math.sqrt(math.max(rsv, 0)) / bnorm
    if rsv ~= rsv then break end  -- nan: A was not positive definite (or overflowed)
    p = tp.eval(r + (rs_new / rs) * p)
    rs = rs_new
  end
  return x, k, history
end

-- The dominant eigenvalue (largest |lambda|) of a square matrix and its unit eigenvector, by
-- power iteration with the Rayleigh quotient v·Av. Converges at the rate |lambda2/lambda1|
-- per step. opts.tol (default 1e-6): stop when the eigenvalue changes by <= tol * |lambda|;
-- opts.maxiter (default 1000); opts.seed (default 0) for the random start vector.
-- Returns lambda (a Lua number), v (a tensor) and the iterations done.
function linalg.power_iteration(a, opts)
  local fname = "tapestry.linalg.power_iteration"
  args.dims(fname, "a", a, 2)
  opts = args.opts(fname, opts, {"tol", "maxiter", "seed"})
  local n = a:size(1)
  if a:size(2) ~= n then args.fail(fname, "a must be square, got %s", shape_str(a.shape)) end
  local tol = args.positive(fname, "opts.tol", opts.tol, 1e-6)
  local maxiter = args.count(fname, "opts.maxiter", opts.maxiter, 1000)
  local seed = opts.seed or 0
  if not args.is_int(seed) then args.fail(fname, "opts.seed must be an integer, got %s", tostring(seed)) end
  local dtype = (a.dtype == "f32" or a.dtype == "f64") and a.dtype or "f64"

  -- A positive random start has a component along the dominant eigenvector almost surely.
  local v = tp.rand({n}, {seed = math.tointeger(seed), dtype = dtype}) + 0.5
  v = tp.eval(v / v:norm())
  local lambda = 0 / 0
  for k = 1, maxiter do
    local w = a:matmul(v)
    local wn, l
    w, wn, l = tp.eval(w, w:norm(), dot(v, w))
    local lv, wnv = l:item(), wn:item()
    if wnv == 0 then return 0, v, k end  -- v is in the null space: A v = 0 v
    local done = math.abs(lv - lambda) <= tol * math.abs(lv)
    lambda = lv
    v = tp.eval(w / wn)
    if done then return lambda, v, k end
  end
  return lambda, v, maxiter
end

return linalg
