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

-- The LAPACK ops (tp.linalg: solve, inv, det, slogdet, cholesky, qr, svd, eigh, eigvalsh) are
-- this module's too.
for name, f in pairs(tp.linalg) do linalg[name] = f end

local function is_inf(p) return p == math.huge or p == "inf" end
local function is_neginf(p) return p == -math.huge or p == "-inf" end

-- The 2-norm of all of x, scaled by max |x| first as LAPACK's nrm2, so f32 values near 1e20
-- do not overflow. dims (optional): reduce only those (each matrix's last two, for a batch).
local function two_norm(x, dims)
  local scale = x:abs():max(dims, {keepdim = true})
  if x.dtype ~= "f32" and x.dtype ~= "f64" then scale = scale:cast("f64") end
  local safe = tp.where(scale:eq(0), 1, scale)  -- an all-zero x has norm 0, not 0/0
  local r = (x / safe):square():sum(dims, {keepdim = true}):sqrt() * scale
  return dims and r:squeeze(-1):squeeze(-1) or r:reshape({})
end

-- numpy.linalg.norm(x, ord). x 1-D: the vector p-norm for any number p (0 counts nonzeros,
-- math.huge / "inf" is max |x|, -math.huge / "-inf" min |x|). x with 2 dims or more and p
-- given: a matrix norm of each matrix of the last two dims: "fro", "nuc" (sum of singular
-- values), 1 / -1 (max / min column sum of |x|), math.huge / -math.huge (rows), 2 / -2 (largest
-- / smallest singular value). p nil: the 2-norm of all of x (Frobenius for a matrix).
function linalg.norm(x, p)
  local fname = "tapestry.linalg.norm"
  args.tensor(fname, "x", x)
  if p == nil or (p == "fro" and x:dim() <= 2) or (p == 2 and x:dim() == 1) then return two_norm(x) end
  if x:dim() <= 1 then
    if is_inf(p) then return x:abs():max() end
    if is_neginf(p) then return x:abs():min() end
    if type(p) ~= "number" then
      args.fail(fname, "p for a vector must be a number, math.huge or 'inf', got %s", tostring(p))
    end
    local xf = (x.dtype == "f32" or x.dtype == "f64") and x or x:cast("f64")
    if p == 0 then return xf:ne(0):sum():cast(xf.dtype) end
    return xf:abs():pow(p):sum():pow(1 / p)
  end
  local a = x:abs()
  if p == "fro" then return two_norm(x, {-2, -1}) end
  if p == "nuc" then return linalg.svd(x, {compute_uv = false}):sum(-1) end
  if p == 2 then return linalg.svd(x, {compute_uv = false}):max(-1) end
  if p == -2 then return linalg.svd(x, {compute_uv = false}):min(-1) end
  if p == 1 then return a:sum(-2):max(-1) end
  if p == -1 then return a:sum(-2):min(-1) end
  if is_inf(p) then return a:sum(-1):max(-1) end
  if is_neginf(p) then return a:sum(-1):min(-1) end
  args.fail(fname, "p for a matrix %s must be 'fro', 'nuc', 1, -1, 2, -2, math.huge or -math.huge, got %s",
            shape_str(x.shape), tostring(p))
end

-- numpy.linalg.pinv: the pseudo-inverse of each matrix of a {..., m, n} -> {..., n, m} from
-- its SVD; singular values <= rcond * the largest count as zero (opts.rcond, default 1e-15).
function linalg.pinv(a, opts)
  local fname = "tapestry.linalg.pinv"
  args.min_dims(fname, "a", a, 2)
  opts = args.opts(fname, opts, {"rcond"})
  local rcond = opts.rcond or 1e-15
  if type(rcond) ~= "number" or rcond < 0 then
    args.fail(fname, "opts.rcond must be a number >= 0, got %s", tostring(rcond))
  end
  local u, s, vh = linalg.svd(a, {full_matrices = false})
  local keep = s:gt(s:max(-1, {keepdim = true}) * rcond)
  local sinv = tp.where(keep, 1 / tp.where(keep, s, 1), 0)
  return (vh:transpose(-2, -1) * sinv:unsqueeze(-2)):matmul(u:transpose(-2, -1))
end

-- numpy.linalg.lstsq(a, b): x minimising ||b - a x|| (the least-norm one when a is rank
-- deficient), from a's SVD. a {m, n}, b {m} or {m, k}. opts.rcond (default eps * max(m, n), as
-- numpy's rcond=None). Returns x ({n} or {n, k}), the squared residual norms ({1} or {k}; numpy
-- gives them only when m > n and a has full rank, here always), the rank (an i64 scalar) and
-- the singular values {min(m, n)}.
function linalg.lstsq(a, b, opts)
  local fname = "tapestry.linalg.lstsq"
  args.dims(fname, "a", a, 2)
  args.tensor(fname, "b", b)
  opts = args.opts(fname, opts, {"rcond"})
  local m, n = a:size(1), a:size(2)
  if (b:dim() ~= 1 and b:dim() ~= 2) or b:size(1) ~= m then
    args.fail(fname, "b must be {%d} or {%d, k} to match a %s, got %s", m, m, shape_str(a.shape),
              shape_str(b.shape))
  end
  local af = (a.dtype == "f32" or a.dtype == "f64") and a or a:cast("f64")
  local eps = af.dtype == "f32" and 2^-23 or 2^-52
  local rcond = opts.rcond or eps * math.max(m, n)
  local u, s, vh = linalg.svd(af, {full_matrices = false})
  local cut = s:max() * rcond
  local keep = s:gt(cut)
  local sinv = tp.where(keep, 1 / tp.where(keep, s, 1), 0)
  local bm = b:dim() == 1 and b:reshape({m, 1}) or b
  local x = vh:t():matmul(u:t():matmul(bm:cast(af.dtype)) * sinv:unsqueeze(2))
  local res = (bm - af:matmul(x)):square():sum(1)
  if b:dim() == 1 then x = x:reshape({n}) end
  return x, res, keep:sum(), s
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
