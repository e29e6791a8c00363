-- tapestry.fem: finite-difference building blocks on regular grids, and a Jacobi solver.
--   local fem = require "tapestry.fem"
--   for _ = 1, 100 do u = tp.eval(fem.heat_step(u, 0.2, {boundary = "periodic"})) end
-- The grid operators are lazy and shape-preserving, so a grid split over ranks by the planner
-- needs only a one-cell halo from each neighbour per step.
local tp = require "tapestry"
local args = require "tapestry.args"

local fem = {}
local shape_str = args.shape_str

local BOUNDARIES = {zero = true, periodic = true, reflect = true}

local function boundary_opt(fname, b)
  if b == nil then return "zero" end
  if not BOUNDARIES[b] then
    args.fail(fname, "opts.boundary must be 'zero', 'periodic' or 'reflect', got %s",
              type(b) == "string" and "'" .. b .. "'" or type(b))
  end
  return b
end

-- The neighbours of every cell along dim d, as two tensors of u's shape: u at i-1 and at i+1.
-- Outside the grid: 0 ("zero"), the other end ("periodic"), or the mirror image without
-- repeating the edge ("reflect", as numpy and tp.stencil: u[0] = u[2]).
local function neighbours(u, d, boundary)
  local n = u:size(d)
  local edge = u.shape
  edge[d] = 1
  if boundary == "zero" then
    local z = tp.zeros(edge, {dtype = u.dtype})
    if n == 1 then return z, z end
    return tp.cat({z, u:narrow(d, 1, n - 1)}, d), tp.cat({u:narrow(d, 2, n - 1), z}, d)
  elseif boundary == "periodic" then
    if n == 1 then return u, u end
    return tp.cat({u:narrow(d, n, 1), u:narrow(d, 1, n - 1)}, d),
           tp.cat({u:narrow(d, 2, n - 1), u:narrow(d, 1, 1)}, d)
  end
  return tp.cat({u:narrow(d, 2, 1), u:narrow(d, 1, n - 1)}, d),
         tp.cat({u:narrow(d, 2, n - 1), u:narrow(d, n - 1, 1)}, d)
end

-- The (2n+1)-point kernel of the n-D Laplacian as a nested Lua table of 3x...x3:
-- -2n in the centre, 1 at the two neighbours along each axis, 0 elsewhere.
local function laplacian_kernel(n)
  local function build(level, offaxis)  -- offaxis: how many earlier indices were not the centre
    local t = {}
    for i = 1, 3 do
      local off = offaxis + (i == 2 and 0 or 1)
      if level == n then
        t[i] = (off == 0 and -2 * n) or (off == 1 and 1) or 0
      else
        t[i] = build(level + 1, off)
      end
    end
    return t
  end
  return build(1, 0)
end

-- The discrete Laplacian sum_d (u[i-e_d] - 2u[i] + u[i+e_d]) / h^2 of an n-D grid u: the
-- 5-point stencil in 2-D, 2n+1 points in n-D; the result has u's shape. opts.boundary: "zero"
-- (default: Dirichlet u = 0 outside), "periodic", "reflect" (a mirror: a Neumann-like edge);
-- opts.h: the grid spacing (default 1). Uses tp.stencil for float grids, else shifted slices.
function fem.laplacian(u, opts)
  local fname = "tapestry.fem.laplacian"
  args.min_dims(fname, "u", u, 1)
  opts = args.opts(fname, opts, {"boundary", "h"})
  local boundary = boundary_opt(fname, opts.boundary)
  local h = args.positive(fname, "opts.h", opts.h, 1)
  local n = u:dim()
  if boundary == "reflect" then
    for d = 1, n do
      if u:size(d) < 2 then
        args.fail(fname, "the reflect boundary needs at least 2 points along every dim, u is %s",
                  shape_str(u.shape))
      end
    end
  end
  local lap
  if tp.stencil and (u.dtype == "f32" or u.dtype == "f64") then
    lap = tp.stencil(u, tp.tensor(laplacian_kernel(n), {dtype = u.dtype}), {boundary = boundary})
  else
    lap = u * (-2 * n)
    for d = 1, n do
      local lo, hi = neighbours(u, d, boundary)
      lap = lap + lo + hi
    end
  end
  if h ~= 1 then lap = lap / (h * h) end
  return lap
end

-- One explicit (forward Euler) step of the heat equation du/dt = laplacian(u):
-- u + alpha * laplacian(u), alpha = dt/h^2 (a number or a tensor). Stable for
-- alpha <= 1/(2n) on an n-D grid (1/4 in 2-D). With periodic boundaries the sum of u is
-- conserved exactly (up to rounding). opts as fem.laplacian.
function fem.heat_step(u, alpha, opts)
  local fname = "tapestry.fem.heat_step"
  args.min_dims(fname, "u", u, 1)
  args.tensor(fname, "alpha", alpha, true)
  opts = args.opts(fname, opts, {"boundary", "h"})
  return u + fem.laplacian(u, opts) * alpha
end

-- Jacobi iteration for A x = b with a dense square matrix a: x <- x + (b - A x) / diag(A).
-- Converges when A is strictly diagonally dominant (or symmetric with 2D - A positive definite).
-- b is {n} or {n, k} (k right-hand sides). opts.tol (default 1e-6): stop when
-- ||b - A x|| <= tol * ||b||; opts.maxiter (default 1000); opts.x0 (default zeros).
-- Returns x, the iterations done and the final relative residual; one observation per step.
function fem.jacobi(a, b, opts)
  local fname = "tapestry.fem.jacobi"
  args.dims(fname, "a", a, 2)
  args.dims(fname, "b", b, {1, 2})
  opts = args.opts(fname, opts, {"tol", "maxiter", "x0"})
  local n = a:size(1)
  if a:size(2) ~= n then args.fail(fname, "a must be square, got %s", shape_str(a.shape)) end
  if b:size(1) ~= n then
    args.fail(fname, "b %s does not match a %s", shape_str(b.shape), shape_str(a.shape))
  end
  local tol = args.positive(fname, "opts.tol", opts.tol, 1e-6)
  local maxiter = args.count(fname, "opts.maxiter", opts.maxiter, 1000)
  local x = opts.x0
  if x ~= nil then
    args.tensor(fname, "opts.x0", x)
    if args.shape_str(x.shape) ~= args.shape_str(b.shape) then
      args.fail(fname, "opts.x0 must have b's shape %s, got %s", shape_str(b.shape), shape_str(x.shape))
    end
  else
    x = tp.zeros(b.shape, {dtype = b.dtype})
  end

  local diag = (a * tp.eye(n, {dtype = a.dtype})):sum(2)
  if b:dim() == 2 then diag = diag:unsqueeze(2) end
  diag, b = tp.eval(diag, b)
  if diag:eq(0):any():item() then args.fail(fname, "a has a zero on its diagonal") end
  local bnorm = b:norm():item()
  if bnorm == 0 then return tp.zeros(b.shape, {dtype = x.dtype}), 0, 0 end

  local rel = math.huge
  for k = 0, maxiter do
    local r = b - a:matmul(x)
    local next_x, rnorm = tp.eval(x + r / diag, r:norm())
    rel = rnorm:item() / bnorm
    if rel <= tol or k == maxiter or rel ~= rel then return x, k, rel end
    x = next_x
  end
end

return fem
