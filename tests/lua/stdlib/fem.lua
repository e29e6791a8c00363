-- tapestry.fem: the Laplacian on known functions, heat_step's conservation, Jacobi solves.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local fem = require "tapestry.fem"
local test, eq, near = check.test, check.eq, check.near

-- x^2 + y^2 on an n x m grid of integer points: its Laplacian is exactly 4.
local function paraboloid(n, m, dtype)
  local x = tp.arange(1, n, {dtype = dtype}):unsqueeze(2)
  local y = tp.arange(1, m, {dtype = dtype}):unsqueeze(1)
  return x * x + y * y
end

-- A naive Laplacian on nested tables, with the same boundary rules.
local function lap_ref(u, boundary)
  local n, m = #u, #u[1]
  local function at(i, j)
    if boundary == "periodic" then
      return u[(i - 1) % n + 1][(j - 1) % m + 1]
    elseif boundary == "reflect" then
      if i < 1 then i = 2 elseif i > n then i = n - 1 end
      if j < 1 then j = 2 elseif j > m then j = m - 1 end
      return u[i][j]
    end
    if i < 1 or i > n or j < 1 or j > m then return 0 end
    return u[i][j]
  end
  local out = {}
  for i = 1, n do
    out[i] = {}
    for j = 1, m do
      out[i][j] = at(i - 1, j) + at(i + 1, j) + at(i, j - 1) + at(i, j + 1) - 4 * u[i][j]
    end
  end
  return out
end

test("fem.laplacian.paraboloid_interior_is_4", function()
  for _, dt in ipairs{"f32", "f64", "i64"} do
    local u = paraboloid(6, 7, dt)
    local lap = fem.laplacian(u)
    eq(lap.shape, {6, 7})
    near(lap[{{2, 5}, {2, 6}}]:totable(), tp.full({4, 5}, 4):totable(), 1e-5, dt)
  end
end)

test("fem.laplacian.boundaries", function()
  local u = tp.randn({5, 6}, {seed = 11, dtype = "f64"})
  local t = u:totable()
  for _, b in ipairs{"zero", "periodic", "reflect"} do
    near(fem.laplacian(u, {boundary = b}):totable(), lap_ref(t, b), 1e-12, b)
  end
  near(fem.laplacian(u):totable(), lap_ref(t, "zero"), 1e-12, "zero is the default")
  near(fem.laplacian(u, {h = 0.5}):totable(), (fem.laplacian(u) * 4):totable(), 1e-12, "opts.h")
end)

test("fem.laplacian.slices_match_stencil", function()
  -- integer grids take the shifted-slices path, float grids tp.stencil (when it exists)
  local ui = (tp.rand({4, 5, 6}, {seed = 12}) * 20):floor():cast("i64")
  for _, b in ipairs{"zero", "periodic", "reflect"} do
    near(fem.laplacian(ui, {boundary = b}):cast("f64"):totable(),
         fem.laplacian(ui:cast("f64"), {boundary = b}):totable(), 0, b)
  end
end)

test("fem.laplacian.other_dims", function()
  -- 1-D: the 3-point second difference of x^2 is 2.
  local x = tp.arange(1, 8, {dtype = "f64"})
  near(fem.laplacian(x * x)[{{2, 7}}]:totable(), tp.full({6}, 2):totable(), 1e-12, "1-D")
  -- 3-D: x^2 + y^2 + z^2 has Laplacian 6 (the 7-point stencil).
  local a = tp.arange(1, 5, {dtype = "f64"})
  local u = (a * a):reshape{5, 1, 1} + (a * a):reshape{1, 5, 1} + (a * a):reshape{1, 1, 5}
  near(fem.laplacian(u)[{{2, 4}, {2, 4}, {2, 4}}]:totable(), tp.full({3, 3, 3}, 6):totable(), 1e-12, "3-D")
  -- a constant has zero Laplacian everywhere with periodic and reflect boundaries
  for _, b in ipairs{"periodic", "reflect"} do
    near(fem.laplacian(tp.full({4, 3, 5}, 2.5), {boundary = b}):abs():max():item(), 0, 1e-6, b)
  end
end)

test("fem.heat_step.conserves_with_periodic", function()
  local u = tp.rand({32, 24}, {seed = 3, dtype = "f64"})
  local total = u:sum():item()
  for _ = 1, 20 do u = tp.eval(fem.heat_step(u, 0.2, {boundary = "periodic"})) end
  near(u:sum():item(), total, 1e-12, "sum conserved")
  check.truthy(u:max():item() - u:min():item() < 1, "smoothed")
  -- a single step equals the formula
  local v = tp.rand({5, 5}, {seed = 4, dtype = "f64"})
  near(fem.heat_step(v, 0.1):totable(), (v + fem.laplacian(v) * 0.1):totable(), 1e-12)
  -- zero boundary: heat leaks out, the sum decreases
  local w = tp.ones({8, 8}, {dtype = "f64"})
  check.truthy(fem.heat_step(w, 0.2):sum():item() < 64, "zero boundary loses heat")
end)

test("fem.jacobi", function()
  local n = 12
  -- strictly diagonally dominant: 4 on the diagonal, random off-diagonal entries in [0, 0.25)
  local a = (tp.rand({n, n}, {seed = 21, dtype = "f64"}) * 0.25) * (1 - tp.eye(n, {dtype = "f64"})) +
            tp.eye(n, {dtype = "f64"}) * 4
  local xs = tp.randn({n}, {seed = 22, dtype = "f64"})
  local b = a:matmul(xs)
  local x, iters, rel = fem.jacobi(a, b, {tol = 1e-10})
  check.truthy(iters > 0 and iters < 200, "iterations " .. iters)
  check.truthy(rel <= 1e-10, "residual " .. rel)
  near(x:totable(), xs:totable(), 1e-8)
  -- several right-hand sides at once
  local bs = tp.stack({b, b * 2}, 2)
  local xm = fem.jacobi(a, bs, {tol = 1e-10})
  near(xm:select(2, 2):totable(), (xs * 2):totable(), 1e-8, "{n, k}")
  -- maxiter stops early and reports it
  local _, it2 = fem.jacobi(a, b, {tol = 1e-14, maxiter = 3})
  eq(it2, 3)
  -- b = 0 gives x = 0 at once
  local z, itz = fem.jacobi(a, tp.zeros({n}, {dtype = "f64"}))
  eq(itz, 0)
  eq(z:abs():max():item(), 0)
end)

check.summary()
