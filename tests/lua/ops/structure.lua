-- Structure ops against numpy: flip, negative slice steps, diagonal, diag, tril, triu, trace,
-- logspace, meshgrid, randint and the *_like creators; gradients by finite differences. The
-- expected values are numpy's for the same inputs (printed by tests/lua/ops/structure_numpy.py).
-- Runs on 1 rank, 3 virtual ranks and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local gradcheck = require "gradcheck"
local test, eq, near = check.test, check.eq, check.near

-- numpy 1.24.2 on A = (arange(1,25)*7 % 11 - 5).reshape(2,3,4), M = A[1], v = {3,-1,2}
local np = {
  flip_all = {{{-2.0, 2.0, -5.0, -1.0}, {3.0, -4.0, 0.0, 4.0}, {-3.0, 1.0, 5.0, -2.0}}, {{2.0, -5.0, -1.0, 3.0}, {-4.0, 0.0, 4.0, -3.0}, {1.0, 5.0, -2.0, 2.0}}},
  flip_13 = {{{-3.0, 1.0, 5.0, -2.0}, {3.0, -4.0, 0.0, 4.0}, {-2.0, 2.0, -5.0, -1.0}}, {{1.0, 5.0, -2.0, 2.0}, {-4.0, 0.0, 4.0, -3.0}, {2.0, -5.0, -1.0, 3.0}}},
  flip_last = {{{1.0, 5.0, -2.0, 2.0}, {-4.0, 0.0, 4.0, -3.0}, {2.0, -5.0, -1.0, 3.0}}, {{-3.0, 1.0, 5.0, -2.0}, {3.0, -4.0, 0.0, 4.0}, {-2.0, 2.0, -5.0, -1.0}}},
  neg_slice = {{{-2.0, -1.0}, {-3.0, -2.0}}, {{2.0, 3.0}, {1.0, 2.0}}},
  neg_slice2 = {{{-5.0, -1.0}, {0.0, 4.0}, {5.0, -2.0}}, {{2.0, -5.0}, {-4.0, 0.0}, {1.0, 5.0}}},
  diagonal = {{2.0, 4.0, -5.0}, {-2.0, 0.0, 2.0}},
  diagonal_p1 = {{-2.0, 0.0, 2.0}, {5.0, -4.0, -2.0}},
  diagonal_m1 = {{-3.0, -1.0}, {4.0, -5.0}},
  diagonal_13 = {{2.0, 5.0}, {-3.0, 0.0}, {3.0, -5.0}},
  diagonal_21 = {{-3.0, -1.0}, {4.0, -5.0}},
  diag_m2 = {1.0, 3.0},
  diag_mm1 = {4.0, -5.0},
  diag_v = {{3.0, 0.0, 0.0}, {0.0, -1.0, 0.0}, {0.0, 0.0, 2.0}},
  diag_v2 = {{0.0, 0.0, 3.0, 0.0, 0.0}, {0.0, 0.0, 0.0, -1.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 2.0}, {0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0}},
  diag_vm1 = {{0.0, 0.0, 0.0, 0.0}, {3.0, 0.0, 0.0, 0.0}, {0.0, -1.0, 0.0, 0.0}, {0.0, 0.0, 2.0, 0.0}},
  tril = {{{2.0, 0.0, 0.0, 0.0}, {-3.0, 4.0, 0.0, 0.0}, {3.0, -1.0, -5.0, 0.0}}, {{-2.0, 0.0, 0.0, 0.0}, {4.0, 0.0, 0.0, 0.0}, {-1.0, -5.0, 2.0, 0.0}}},
  tril_m1 = {{{0.0, 0.0, 0.0, 0.0}, {-3.0, 0.0, 0.0, 0.0}, {3.0, -1.0, 0.0, 0.0}}, {{0.0, 0.0, 0.0, 0.0}, {4.0, 0.0, 0.0, 0.0}, {-1.0, -5.0, 0.0, 0.0}}},
  triu = {{{2.0, -2.0, 5.0, 1.0}, {0.0, 4.0, 0.0, -4.0}, {0.0, 0.0, -5.0, 2.0}}, {{-2.0, 5.0, 1.0, -3.0}, {0.0, 0.0, -4.0, 3.0}, {0.0, 0.0, 2.0, -2.0}}},
  triu_1 = {{{0.0, -2.0, 5.0, 1.0}, {0.0, 0.0, 0.0, -4.0}, {0.0, 0.0, 0.0, 2.0}}, {{0.0, 5.0, 1.0, -3.0}, {0.0, 0.0, -4.0, 3.0}, {0.0, 0.0, 0.0, -2.0}}},
  trace = 0.0,
  logspace = {0.09999999999999999, 0.31622776601683794, 1.0, 3.162277660168379, 10.0, 31.622776601683796, 100.0},
  logspace2 = {1.0, 2.0, 4.0, 8.0, 16.0},
  mesh_xy_x = {{{1.0, 1.0, 1.0, 1.0}, {2.0, 2.0, 2.0, 2.0}, {3.0, 3.0, 3.0, 3.0}}, {{1.0, 1.0, 1.0, 1.0}, {2.0, 2.0, 2.0, 2.0}, {3.0, 3.0, 3.0, 3.0}}},
  mesh_xy_y = {{{10.0, 10.0, 10.0, 10.0}, {10.0, 10.0, 10.0, 10.0}, {10.0, 10.0, 10.0, 10.0}}, {{20.0, 20.0, 20.0, 20.0}, {20.0, 20.0, 20.0, 20.0}, {20.0, 20.0, 20.0, 20.0}}},
  mesh_xy_z = {{{5.0, 6.0, 7.0, 8.0}, {5.0, 6.0, 7.0, 8.0}, {5.0, 6.0, 7.0, 8.0}}, {{5.0, 6.0, 7.0, 8.0}, {5.0, 6.0, 7.0, 8.0}, {5.0, 6.0, 7.0, 8.0}}},
  mesh_ij_x = {{{1.0, 1.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0}}, {{2.0, 2.0, 2.0, 2.0}, {2.0, 2.0, 2.0, 2.0}}, {{3.0, 3.0, 3.0, 3.0}, {3.0, 3.0, 3.0, 3.0}}},
  mesh_ij_y = {{{10.0, 10.0, 10.0, 10.0}, {20.0, 20.0, 20.0, 20.0}}, {{10.0, 10.0, 10.0, 10.0}, {20.0, 20.0, 20.0, 20.0}}, {{10.0, 10.0, 10.0, 10.0}, {20.0, 20.0, 20.0, 20.0}}},
  mesh_ij_z = {{{5.0, 6.0, 7.0, 8.0}, {5.0, 6.0, 7.0, 8.0}}, {{5.0, 6.0, 7.0, 8.0}, {5.0, 6.0, 7.0, 8.0}}, {{5.0, 6.0, 7.0, 8.0}, {5.0, 6.0, 7.0, 8.0}}},
}

local A = (tp.arange(1, 24, 1, {dtype = "f64"}) * 7 % 11 - 5):reshape{2, 3, 4}
local M = A[2]
local v = tp.tensor({3, -1, 2}, {dtype = "f64"})
-- The same values through a sharded producer: a matmul by the identity, so that plans split it.
local As = tp.einsum("bij,jk->bik", A, tp.eye(4, {dtype = "f64"}))

local function same(x, want, msg)
  eq(x.dtype, "f64", msg)
  eq(x:totable(), want, msg)
end

test("flip", function()
  for _, a in ipairs{A, As} do
    same(a:flip(), np.flip_all, "flip all")
    same(tp.flip(a, {1, 3}), np.flip_13, "flip {1,3}")
    same(a:flip(-1), np.flip_last, "flip -1")
    same(a:flip(2):flip(2), A:totable(), "flip twice")
  end
  eq(tp.tensor({1, 2, 3}, {dtype = "i32"}):flip():totable(), {3, 2, 1})
  eq(tp.tensor{true, false}:flip():totable(), {false, true})
end)

test("negative_steps", function()
  for _, a in ipairs{A, As} do
    same(a[{{2, 1, -1}, {3, 1, -2}, {4, 1, -3}}], np.neg_slice, "all negative")
    same(a[{{}, {-1, 1, -1}, {3, 2, -1}}], np.neg_slice2, "mixed")
  end
  local x = tp.arange(1, 10)
  eq(x[{{10, 1, -1}}]:totable(), {10, 9, 8, 7, 6, 5, 4, 3, 2, 1})
  eq(x[{{-1, 1, -4}}]:totable(), {10, 6, 2})
  eq(x[{{9, 3, -3}}]:totable(), {9, 6, 3})
  eq(x[{{5, 5, -1}}]:totable(), {5})
  eq(x[{{8, 2, -2}}][{{4, 1, -1}}]:totable(), {2, 4, 6, 8}, "reversed twice")
end)

test("diagonal", function()
  for _, a in ipairs{A, As} do
    same(a:diagonal(0, 2, 3), np.diagonal, "batched")
    same(tp.diagonal(a, 1, 2, 3), np.diagonal_p1, "offset 1")
    same(a:diagonal(-1, -2, -1), np.diagonal_m1, "offset -1")
    same(a:diagonal(), a:diagonal(0, 1, 2):totable(), "default dims 1, 2")
    same(a:diagonal(0, 1, 3), np.diagonal_13, "dims 1, 3")
    same(a:diagonal(1, 3, 2), np.diagonal_21, "dims 3, 2")
  end
  eq(A:diagonal().shape, {4, 2})
end)

test("diag", function()
  same(tp.diag(M, 2), np.diag_m2, "of a matrix, k = 2")
  same(M:diag(-1), np.diag_mm1, "of a matrix, k = -1")
  same(tp.diag(v), np.diag_v, "of a vector")
  same(v:diag(2), np.diag_v2, "of a vector, k = 2")
  same(tp.diag(v, -1), np.diag_vm1, "of a vector, k = -1")
  eq(tp.diag(tp.tensor({1, 2}, {dtype = "i64"})).dtype, "i64")
  eq(tp.diag(tp.tensor{true, true}):totable(), {{true, false}, {false, true}})
end)

test("tril_triu", function()
  for _, a in ipairs{A, As} do
    same(a:tril(), np.tril, "tril")
    same(tp.tril(a, -1), np.tril_m1, "tril -1")
    same(a:triu(), np.triu, "triu")
    same(tp.triu(a, 1), np.triu_1, "triu 1")
  end
  local i = tp.ones({3, 3}, {dtype = "i32"})
  eq(i:tril().dtype, "i32")
  eq(i:triu(1):sum():item(), 3)
  eq(tp.tensor{{true, true}, {true, true}}:tril():totable(), {{true, false}, {true, true}})
end)

test("trace", function()
  eq(M:trace():item(), np.trace)
  eq(tp.trace(M):item(), np.trace)
  eq(tp.trace(As[2]):item(), np.trace)
  local t = tp.arange(1, 9, 1, {dtype = "i32"}):reshape{3, 3}:trace()
  eq(t.dtype, "i64")
  eq(t:item(), 15)
end)

test("logspace", function()
  near(tp.logspace(-1, 2, 7, {dtype = "f64"}):totable(), np.logspace, 1e-12)
  near(tp.logspace(-1, 2, 7):totable(), np.logspace, 1e-5)
  eq(tp.logspace(-1, 2, 7).dtype, "f32")
  eq(tp.logspace(0, 4, 5, {base = 2, dtype = "f64"}):totable(), np.logspace2)
end)

test("meshgrid", function()
  local x, y, z = tp.tensor{1, 2, 3}, tp.tensor{10, 20}, tp.tensor{5, 6, 7, 8}
  local X, Y, Z = tp.meshgrid(x, y, z)
  eq(X:cast("f64"):totable(), np.mesh_xy_x)
  eq(Y:cast("f64"):totable(), np.mesh_xy_y)
  eq(Z:cast("f64"):totable(), np.mesh_xy_z)
  X, Y, Z = tp.meshgrid({x, y, z}, {indexing = "ij"})
  eq(X:cast("f64"):totable(), np.mesh_ij_x)
  eq(Y:cast("f64"):totable(), np.mesh_ij_y)
  eq(Z:cast("f64"):totable(), np.mesh_ij_z)
  local P, Q = tp.meshgrid(x, y, {indexing = "ij"})
  eq((P * Q):sum():item(), 6 * 30)
  eq(select("#", tp.meshgrid(x)), 1)
end)

test("randint", function()
  local r = tp.randint(-2, 3, {4000}, {seed = 11})
  eq(r.dtype, "i64")
  eq(r:min():item(), -2)
  eq(r:max():item(), 3)
  for k = -2, 3 do
    local n = r:eq(k):sum():item()
    check.truthy(n > 550 and n < 790, "count of " .. k .. " is " .. n)
  end
  -- Keyed by (seed, element): the same on every mesh and for every box of it.
  eq(tp.randint(1, 6, {10}, {seed = 5}):totable(), {5, 6, 3, 4, 6, 2, 5, 1, 5, 3})
  eq(tp.randint(1, 6, {10}, {seed = 5}):totable(), tp.randint(1, 6, {2, 5}, {seed = 5}):reshape{10}:totable())
  eq(tp.randint(0, 9, {3}, {seed = 1, dtype = "i32"}).dtype, "i32")
  eq(tp.randint(7, 7, {3}):totable(), {7, 7, 7})
  local big = tp.randint(math.maxinteger - 10, math.maxinteger, {100}, {seed = 2})
  check.truthy(big:min():item() >= math.maxinteger - 10, "near the top of i64")
end)

test("like", function()
  local x = tp.tensor({{1, 2, 3}, {4, 5, 6}}, {dtype = "i32"})
  eq(tp.zeros_like(x).dtype, "i32")
  eq(tp.zeros_like(x):totable(), {{0, 0, 0}, {0, 0, 0}})
  eq(tp.ones_like(x, {dtype = "f64"}):sum():item(), 6)
  eq(tp.ones_like(x, {dtype = "f64"}).dtype, "f64")
  eq(tp.full_like(x, 7):totable(), {{7, 7, 7}, {7, 7, 7}})
  eq(tp.full_like(x, 2.5, {dtype = "f32"}):totable(), {{2.5, 2.5, 2.5}, {2.5, 2.5, 2.5}})
  eq(tp.full_like(x, true):totable(), {{1, 1, 1}, {1, 1, 1}})
  local f = tp.zeros({3, 4}, {dtype = "f64"})
  eq(tp.rand_like(f, {seed = 3}):totable(), tp.rand({3, 4}, {seed = 3, dtype = "f64"}):totable())
  eq(tp.randn_like(f, {seed = 3}):totable(), tp.randn({3, 4}, {seed = 3, dtype = "f64"}):totable())
  tp.zeros_like(f, {name = "zl"})
  eq(tp.env.zl.shape, {3, 4})
end)

test("grad", function()
  gradcheck.check("flip", function(x) return x:flip{1, 2} end, {{3, 4}})
  gradcheck.check("negative steps", function(x) return x[{{3, 1, -2}, {4, 1, -1}}] end, {{3, 4}})
  gradcheck.check("diagonal", function(x) return x:diagonal(1, 2, 3) end, {{2, 3, 4}})
  gradcheck.check("diag of a vector", function(x) return tp.diag(x, -1) end, {{3}})
  gradcheck.check("tril", function(x) return x:tril(-1) end, {{2, 3, 4}})
  gradcheck.check("triu", function(x) return x:triu(1) end, {{3, 4}})
  gradcheck.check("trace", function(x) return x:trace() end, {{3, 3}})
  gradcheck.check("reflect pad", function(x) return x:pad({{2, 1}}, {mode = "reflect"}) end, {{4}})
  local w = tp.rand({3, 3}, {seed = 4, dtype = "f64"})
  eq(tp.grad(w:trace(), {w})[1]:totable(), tp.eye(3, {dtype = "f64"}):totable())
end)

check.mistake("flip_repeated", function() return tp.flip(A, {1, 1}) end, "tp.flip", "dim 1 is given twice")
check.mistake("flip_dim", function() return A:flip(4) end, "tp.flip", "dim")
check.mistake("step_zero", function() return A[{{1, 2, 0}}] end, "step must not be zero")
check.mistake("diagonal_same_dims", function() return A:diagonal(0, 2, 2) end, "tp.diagonal", "dim1 and dim2")
check.mistake("diagonal_1d", function() return v:diagonal() end, "tp.diagonal", "{3}")
check.mistake("diag_3d", function() return tp.diag(A) end, "tp.diag", "1-D", "{2,3,4}")
check.mistake("tril_1d", function() return v:tril() end, "tp.tril", "at least 2 dims", "{3}")
check.mistake("triu_1d", function() return tp.triu(v) end, "tp.triu", "2 dims", "{3}")
check.mistake("trace_3d", function() return A:trace() end, "trace", "matrix", "{2,3,4}")
check.mistake("randint_order", function() return tp.randint(5, 1, {2}) end, "tp.randint", "lo (5)", "hi (1)")
check.mistake("randint_dtype", function() return tp.randint(1, 5, {2}, {dtype = "f32"}) end, "tp.randint", "integer")
check.mistake("randint_range", function() return tp.randint(math.mininteger, math.maxinteger, {2}) end,
              "tp.randint", "2^53")
check.mistake("logspace_dtype", function() return tp.logspace(0, 1, 3, {dtype = "i32"}) end, "tp.logspace", "f32 or f64")
check.mistake("meshgrid_2d", function() return tp.meshgrid(M, v) end, "tp.meshgrid", "tensor 1 must be 1-D", "{3,4}")
check.mistake("meshgrid_indexing", function() return tp.meshgrid(v, {indexing = "yx"}) end, "tp.meshgrid", "'yx'")
check.mistake("full_like_value", function() return tp.full_like(v, "a") end, "tp.full_like", "number or boolean")
check.mistake("rand_like_int", function() return tp.rand_like(tp.ones({2}, {dtype = "i32"})) end, "tp.rand_like")

check.summary()
