-- Indexing against numpy: gather, scatter, scatter_add, index_select, take, tp.where(cond),
-- x[integer tensor], x[mask] and writes through masks and index tensors; gradients by finite
-- differences; larger sharded cases against a plain Lua loop. The expected values are numpy's
-- for the same inputs (printed by tests/lua/ops/index_numpy.py). Index values are 1-based.
-- Runs on 1 rank, 3 virtual ranks and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local gradcheck = require "gradcheck"
local test, eq = check.test, check.eq

-- numpy 1.24.2 on A = ((arange(1,61)*7) % 13 - 6).reshape(3,4,5) and index.py's indices
local np = {
  gather3 = {{{1.0, 2.0, 3.0, -5.0, -4.0, 1.0}, {-2.0, -1.0, 4.0, 5.0, -3.0, -2.0}, {-5.0, 0.0, 1.0, 6.0, -6.0, -5.0}, {-4.0, -3.0, 2.0, 3.0, 4.0, -4.0}}, {{6.0, -2.0, -1.0, 0.0, 5.0, 6.0}, {-6.0, -5.0, -4.0, 1.0, 2.0, -6.0}, {4.0, 5.0, -3.0, -2.0, 3.0, 4.0}, {1.0, 6.0, -6.0, -1.0, 0.0, 1.0}}, {{2.0, 3.0, -5.0, -4.0, -3.0, 2.0}, {-1.0, 4.0, 5.0, 6.0, -2.0, -1.0}, {0.0, 1.0, 2.0, -6.0, -5.0, 0.0}, {-3.0, -2.0, 3.0, 4.0, -4.0, -3.0}}},
  gather1 = {{{1.0, 2.0, -1.0, -4.0, -3.0}, {-6.0, 4.0, 5.0, 2.0, -1.0}, {0.0, -3.0, -6.0, -5.0, 5.0}, {2.0, 3.0, 0.0, -3.0, -2.0}}, {{-2.0, -5.0, -4.0, 6.0, 3.0}, {4.0, 1.0, -2.0, -1.0, -4.0}, {6.0, -6.0, 4.0, 1.0, 2.0}, {-1.0, -4.0, -3.0, -6.0, 4.0}}},
  gather2 = {{{1.0, 4.0, -6.0}, {2.0, -5.0, -2.0}, {6.0, -4.0, 2.0}}, {{-6.0, -3.0, 0.0}, {-2.0, 1.0, 4.0}, {-1.0, 5.0, -5.0}}},
  scatter3 = {{{1.0, -2.0, -3.0, -4.0, 2.0}, {-3.0, -4.0, 4.0, 1.0, 0.0}, {4.0, 3.0, -6.0, -1.0, -2.0}, {2.0, 1.0, -2.0, -3.0, 4.0}}, {{0.0, 5.0, -4.0, 4.0, 1.0}, {-2.0, 4.0, 3.0, 2.0, -1.0}, {3.0, 2.0, 1.0, -2.0, -3.0}, {1.0, 0.0, 0.0, -4.0, 4.0}}, {{-1.0, -2.0, 4.0, 3.0, -3.0}, {-3.0, -2.0, 2.0, 1.0, -2.0}, {4.0, 1.0, 0.0, -5.0, -4.0}, {-4.0, -1.0, -2.0, 4.0, 3.0}}},
  scatter_add3 = {{{1.0, -7.0, -1.0, -1.0, 5.0}, {-6.0, 0.0, 4.0, 6.0, -1.0}, {10.0, 3.0, -6.0, 0.0, -11.0}, {4.0, -4.0, 1.0, -6.0, 7.0}}, {{-2.0, 2.0, -5.0, 12.0, 1.0}, {-12.0, 5.0, -2.0, 2.0, -5.0}, {6.0, -1.0, 4.0, -4.0, 2.0}, {0.0, 6.0, -3.0, -10.0, 7.0}}, {{-6.0, -4.0, 0.0, 6.0, -3.0}, {1.0, 1.0, 7.0, -1.0, 4.0}, {6.0, -5.0, 1.0, -8.0, -2.0}, {-4.0, 2.0, -9.0, 8.0, 1.0}}},
  scatter_add1 = {{{2.0, -5.0, 2.0, -6.0, 0.0}, {-3.0, 4.0, -3.0, 5.0, -4.0}, {7.0, 0.0, -7.0, -1.0, -5.0}, {3.0, -4.0, 3.0, -5.0, 1.0}}, {{2.0, 5.0, 1.0, 7.0, 0.0}, {-2.0, 4.0, -5.0, 3.0, -4.0}, {3.0, 0.0, 6.0, -2.0, 5.0}, {3.0, 6.0, 2.0, -5.0, 1.0}}, {{-5.0, -1.0, -8.0, 3.0, 0.0}, {2.0, -2.0, 1.0, 3.0, 6.0}, {-2.0, -9.0, 1.0, -1.0, 5.0}, {-4.0, 0.0, -7.0, 4.0, 1.0}}},
  scatter_val2 = {{{9.5, 9.5, 9.5, -4.0, 3.0}, {-3.0, 9.5, 9.5, 5.0, -1.0}, {9.5, 0.0, 9.5, 1.0, -5.0}, {9.5, 9.5, 3.0, -3.0, 4.0}}, {{9.5, 9.5, -1.0, 6.0, 0.0}, {9.5, 9.5, 9.5, 2.0, -4.0}, {3.0, 9.5, 9.5, -2.0, 5.0}, {9.5, 6.0, 9.5, -6.0, 1.0}}, {{-5.0, 2.0, -4.0, 3.0, -3.0}, {4.0, -2.0, 5.0, -1.0, 6.0}, {0.0, -6.0, 1.0, -5.0, 2.0}, {-4.0, 3.0, -3.0, 4.0, -2.0}}},
  index_select2 = {{{2.0, -4.0, 3.0, -3.0, 4.0}, {1.0, -5.0, 2.0, -4.0, 3.0}, {2.0, -4.0, 3.0, -3.0, 4.0}, {-3.0, 4.0, -2.0, 5.0, -1.0}}, {{-1.0, 6.0, 0.0, -6.0, 1.0}, {-2.0, 5.0, -1.0, 6.0, 0.0}, {-1.0, 6.0, 0.0, -6.0, 1.0}, {-6.0, 1.0, -5.0, 2.0, -4.0}}, {{-4.0, 3.0, -3.0, 4.0, -2.0}, {-5.0, 2.0, -4.0, 3.0, -3.0}, {-4.0, 3.0, -3.0, 4.0, -2.0}, {4.0, -2.0, 5.0, -1.0, 6.0}}},
  take = {{-2.0, 1.0}, {4.0, -2.0}},
  where = {{1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3}, {1, 2, 2, 3, 4, 4, 1, 1, 3, 3, 3, 4, 1, 2, 2, 2, 4, 4}, {5, 2, 4, 1, 3, 5, 2, 4, 1, 3, 5, 2, 4, 1, 3, 5, 2, 4}},
  masked = {3.0, 4.0, 5.0, 6.0, 3.0, 4.0, 5.0, 6.0, 3.0, 4.0, 5.0, 6.0, 3.0, 4.0, 5.0, 6.0, 3.0, 4.0},
  masked_rows = {{-3.0, 4.0, -2.0, 5.0, -1.0}, {2.0, -4.0, 3.0, -3.0, 4.0}, {-2.0, 5.0, -1.0, 6.0, 0.0}, {3.0, -3.0, 4.0, -2.0, 5.0}, {4.0, -2.0, 5.0, -1.0, 6.0}},
  int_sub = {{{{6.0, 0.0, -6.0, 1.0, -5.0}, {1.0, -5.0, 2.0, -4.0, 3.0}}, {{-3.0, 4.0, -2.0, 5.0, -1.0}, {6.0, 0.0, -6.0, 1.0, -5.0}}}, {{{3.0, -3.0, 4.0, -2.0, 5.0}, {-2.0, 5.0, -1.0, 6.0, 0.0}}, {{-6.0, 1.0, -5.0, 2.0, -4.0}, {3.0, -3.0, 4.0, -2.0, 5.0}}}, {{{0.0, -6.0, 1.0, -5.0, 2.0}, {-5.0, 2.0, -4.0, 3.0, -3.0}}, {{4.0, -2.0, 5.0, -1.0, 6.0}, {0.0, -6.0, 1.0, -5.0, 2.0}}}},
  fill = {{{1.0, -5.0, 2.0, -4.0, -1.0}, {-3.0, -1.0, -2.0, -1.0, -1.0}, {-1.0, 0.0, -6.0, 1.0, -5.0}, {2.0, -4.0, -1.0, -3.0, -1.0}}, {{-2.0, -1.0, -1.0, -1.0, 0.0}, {-6.0, 1.0, -5.0, 2.0, -4.0}, {-1.0, -3.0, -1.0, -2.0, -1.0}, {-1.0, -1.0, 0.0, -6.0, 1.0}}, {{-5.0, 2.0, -4.0, -1.0, -3.0}, {-1.0, -2.0, -1.0, -1.0, -1.0}, {0.0, -6.0, 1.0, -5.0, 2.0}, {-4.0, -1.0, -3.0, -1.0, -2.0}}},
  scatter_rows = {{{1.0, -5.0, 2.0, -4.0, 3.0}, {1.0, 2.0, 3.0, 4.0, 5.0}, {6.0, 0.0, -6.0, 1.0, -5.0}, {1.0, 2.0, 3.0, 4.0, 5.0}}, {{1.0, 2.0, 3.0, 4.0, 5.0}, {-6.0, 1.0, -5.0, 2.0, -4.0}, {1.0, 2.0, 3.0, 4.0, 5.0}, {-1.0, 6.0, 0.0, -6.0, 1.0}}, {{-5.0, 2.0, -4.0, 3.0, -3.0}, {1.0, 2.0, 3.0, 4.0, 5.0}, {0.0, -6.0, 1.0, -5.0, 2.0}, {-4.0, 3.0, -3.0, 4.0, -2.0}}},
  put = {{{1.0, -5.0, 2.0, -4.0, 3.0}, {7.0, 7.0, 7.0, 7.0, 7.0}, {6.0, 0.0, -6.0, 1.0, -5.0}, {7.0, 7.0, 7.0, 7.0, 7.0}}, {{-2.0, 5.0, -1.0, 6.0, 0.0}, {7.0, 7.0, 7.0, 7.0, 7.0}, {3.0, -3.0, 4.0, -2.0, 5.0}, {7.0, 7.0, 7.0, 7.0, 7.0}}, {{-5.0, 2.0, -4.0, 3.0, -3.0}, {7.0, 7.0, 7.0, 7.0, 7.0}, {0.0, -6.0, 1.0, -5.0, 2.0}, {7.0, 7.0, 7.0, 7.0, 7.0}}},
}

local A = ((tp.arange(1, 60, 1, {dtype = "f64"}) * 7) % 13 - 6):reshape{3, 4, 5}
-- The same values through a sharded producer: a matmul by the identity, so that plans split it.
local As = tp.einsum("bij,jk->bik", A, tp.eye(5, {dtype = "f64"}))
local function ix(n, shape, size, mul)  -- ((arange(n) * mul) % size + 1).reshape(shape), as numpy's
  return ((tp.arange(0, n - 1, 1, {dtype = "i64"}) * (mul or 7)) % size + 1):reshape(shape)
end
local G3, G1, G2 = ix(72, {3, 4, 6}, 5), ix(40, {2, 4, 5}, 3, 11), ix(18, {2, 3, 3}, 4, 5)
local S = ((tp.arange(1, 72, 1, {dtype = "f64"}) * 5) % 9 - 4):reshape{3, 4, 6}
local function i64(t) return tp.tensor(t, {dtype = "i64"}) end

local function same(x, want, msg)
  eq(x.dtype, "f64", msg)
  eq(x:totable(), want, msg)
end

test("gather", function()
  for _, a in ipairs{A, As} do
    same(tp.gather(a, 3, G3), np.gather3, "dim 3, index wider than x")
    same(a:gather(1, G1), np.gather1, "dim 1, index smaller in dim 1")
    same(a:gather(-2, G2), np.gather2, "dim -2, index smaller in the other dims")
    same(a:gather(3, G3:cast("i32")), np.gather3, "i32 index")
    same(a:gather(3, G3 - 6), np.gather3, "negative values count from the end")
  end
  eq(tp.gather(tp.tensor{10, 20, 30}, 1, {3, 3, 1}):totable(), {30, 30, 10}, "a Lua table index")
  eq(tp.gather(tp.tensor({1, 2}, {dtype = "i32"}), 1, {2}).dtype, "i32", "x's dtype")
  eq(tp.gather(tp.tensor{true, false}, 1, {2, 1}):totable(), {false, true}, "bool x")
end)

test("scatter", function()
  for _, a in ipairs{A, As} do
    same(tp.scatter(a, 3, G3[{{}, {}, {1, 4}}], S), np.scatter3, "src larger than index, repeats: last wins")
    same(a:scatter_add(3, G3, S), np.scatter_add3, "repeats accumulate")
    same(a:scatter_add(1, G1, S), np.scatter_add1, "index smaller than x in the other dims")
    same(a:scatter(2, G2, 9.5), np.scatter_val2, "a number as src")
  end
  eq(tp.scatter(tp.zeros({3}, {dtype = "i32"}), 1, {3, 1}, tp.tensor{7.9, 8}):totable(), {8, 0, 7},
     "src cast to x's dtype")
end)

test("index_select_take", function()
  for _, a in ipairs{A, As} do
    same(a:index_select(2, i64{4, 1, 4, 2}), np.index_select2, "repeats and order")
    same(tp.index_select(a, 2, {4, 1, 4, 2}), np.index_select2, "a Lua table index")
    same(a:take{{60, 1}, {7, -1}}, np.take, "flat positions")
  end
  eq(tp.take(tp.tensor{1, 2, 3}, 2).shape, {}, "a scalar index gives a scalar")
end)

test("where_and_masks", function()
  for _, a in ipairs{A, As} do
    local idx = {tp.where(a:gt(2))}
    eq(#idx, 3, "one index tensor per dim")
    for d = 1, 3 do
      eq(idx[d].dtype, "i64")
      eq(idx[d]:totable(), np.where[d], "where dim " .. d)
    end
    same(a[a:gt(2)], np.masked, "x[mask]")
    same(a[a:sum(3):gt(0)], np.masked_rows, "a mask of the leading dims selects rows")
    same(a[{{}, i64{{3, 1}, {2, 3}}}], np.int_sub, "an integer tensor in a subscript")
  end
  eq(tp.where(tp.tensor{0, 3, 0, 1}):totable(), {2, 4}, "a non-bool cond: nonzero")
  eq(tp.where(A:gt(2), A, 0):totable()[1][1], {0, 0, 0, 0, 3}, "the 3-argument form is unchanged")
end)

test("writes", function()
  tp.env.w = A
  tp.env.w[A:gt(2)] = -1
  same(tp.env.w, np.fill, "w[mask] = number")
  tp.env.w = A
  tp.env.w[A:sum(3):gt(0)] = tp.arange(1, 5, 1, {dtype = "f64"})
  same(tp.env.w, np.scatter_rows, "w[mask] = tensor: in order")
  tp.env.w = As
  tp.env.w[{{}, i64{2, 4}}] = 7
  same(tp.env.w, np.put, "w[{{}, idx}] = number")
  tp.env.w = nil
end)

test("gradients", function()
  local opts = {tol = 1e-6}
  gradcheck.check("gather", function(x) return x:gather(2, G2) end, {{2, 4, 3}}, opts)
  gradcheck.check("gather_repeats", function(x) return x:gather(3, G3) end, {{3, 4, 5}}, opts)
  gradcheck.check("scatter", function(x, s) return x:scatter(3, G3[{{}, {}, {1, 4}}], s) end, {{3, 4, 5}, {3, 4, 4}}, opts)
  gradcheck.check("scatter_add", function(x, s) return x:scatter_add(1, G1, s) end, {{3, 4, 5}, {2, 4, 5}}, opts)
  gradcheck.check("index_select", function(x) return x:index_select(2, {4, 1, 4}) end, {{3, 4, 2}}, opts)
  gradcheck.check("take", function(x) return x:take{{6, 1}, {6, -1}} end, {{2, 3}}, opts)
  local m = tp.tensor{{true, false, true}, {false, true, true}}
  gradcheck.check("masked_select", function(x) return x[m] end, {{2, 3}}, opts)
  gradcheck.check("index_tensor", function(x) return x[{{}, i64{3, 1, 3}}] end, {{2, 3}}, opts)
end)

-- Large enough that the plans split them: compared with a plain Lua loop.
test("sharded_against_a_loop", function()
  local n, m, k = 48, 40, 30
  local x = tp.rand({n, m}, {seed = 3, dtype = "f64"})
  local idx = tp.randint(1, m, {n, k}, {seed = 4})
  local src = tp.rand({n, k}, {seed = 5, dtype = "f64"})
  local xt, it, st = x:totable(), idx:totable(), src:totable()
  local g = tp.gather(x:constrain(tp.split(1)), 2, idx:constrain(tp.split(1))):totable()
  local acc = tp.scatter_add(x, 2, idx, src):totable()
  local want = {}
  for i = 1, n do want[i] = table.move(xt[i], 1, m, 1, {}) end
  for i = 1, n do
    for j = 1, k do
      eq(g[i][j], xt[i][it[i][j]], "gather")
      want[i][it[i][j]] = want[i][it[i][j]] + st[i][j]
    end
  end
  check.near(acc, want, 1e-12, "scatter_add along a whole dim, the other split")
  -- Along dim 1: gather splits any dim; scatter_add keeps dim 1 whole.
  local idx1 = tp.randint(1, n, {k, m}, {seed = 6})
  local i1, s1 = idx1:totable(), tp.rand({k, m}, {seed = 7, dtype = "f64"})
  local g1 = x:gather(1, idx1):totable()
  local a1 = tp.scatter_add(x, 1, idx1, s1):totable()
  local st1 = s1:totable()
  for i = 1, n do want[i] = table.move(xt[i], 1, m, 1, {}) end
  for i = 1, k do
    for j = 1, m do
      eq(g1[i][j], xt[i1[i][j]][j], "gather dim 1")
      want[i1[i][j]][j] = want[i1[i][j]][j] + st1[i][j]
    end
  end
  check.near(a1, want, 1e-12, "scatter_add along dim 1")
  -- A mask over a large tensor: the count, then the selection, in row-major order.
  local sel = x[x:gt(0.5)]:totable()
  local w, c = {}, 0
  for i = 1, n do for j = 1, m do if xt[i][j] > 0.5 then c = c + 1; w[c] = xt[i][j] end end end
  eq(#sel, c, "count")
  eq(sel, w, "x[mask]")
end)

check.mistake("gather_float_index", function() return A:gather(1, tp.ones{3, 4, 5}) end, "tp.gather",
              "index must be an integer tensor", "f32 {3,4,5}")
check.mistake("gather_rank", function() return A:gather(1, i64{1, 2}) end, "tp.gather",
              "index must have x's number of dims (3)", "{2}", "{3,4,5}")
check.mistake("gather_larger", function() return A:gather(1, ix(60, {3, 5, 4}, 3)) end, "tp.gather",
              "index {3,5,4} is larger than x {3,4,5} in dim 2")
check.mistake("gather_out_of_range", function() return A:gather(3, G3 + 1):totable() end, "tp.gather",
              "index 6 is out of range for dim 3 of size 5")
check.mistake("gather_zero", function() return A:gather(3, G3 * 0):totable() end, "tp.gather", "index 0")
check.mistake("gather_dim", function() return A:gather(4, G3) end, "tp.gather", "4")
check.mistake("scatter_src_small", function() return A:scatter(3, G3, S[{{}, {}, {1, 2}}]) end, "tp.scatter",
              "src {3,4,2} is smaller than index {3,4,6} in dim 3")
check.mistake("scatter_out_of_range", function() return A:scatter(2, G3[{{}, {}, {1, 5}}] - 9, S):totable() end, "tp.scatter",
              "index -8 is out of range for dim 2 of size 4")
check.mistake("scatter_add_bool", function() return tp.ones({3}, {dtype = "bool"}):scatter_add(1, {1}, true) end,
              "tp.scatter_add", "numeric", "bool")
check.mistake("index_select_2d", function() return A:index_select(1, i64{{1}}) end, "tp.index_select", "1-D", "{1,1}")
check.mistake("take_out_of_range", function() return A:take{61}:totable() end, "tp.take", "index 61", "size 60")
check.mistake("mask_shape", function() return A[tp.ones{4}:gt(0)] end, "mask {4} must match the leading dims of x {3,4,5}")
check.mistake("float_subscript", function() return A[tp.ones{2}] end, "integer (i32, i64) or bool", "f32 {2}")
check.mistake("two_index_tensors", function() return A[{i64{1}, i64{1}}] end, "only one index tensor")
check.mistake("index_with_ranges", function() return A[{{1, 2}, i64{1}}] end, "must be {}")
check.mistake("where_scalar", function() return tp.where(tp.tensor(true)) end, "tp.where", "scalar")
check.mistake("write_mask_shape", function()
  tp.env.keep2 = A
  tp.env.keep2[A:gt(2)] = tp.ones{4}
end, "value {4} cannot be broadcast to the 18 selected elements {18}")
check.mistake("write_index_out_of_range", function()
  tp.env.keep2 = A
  tp.env.keep2[i64{9}] = 1
  return tp.env.keep2:totable()
end, "region write: index 9 is out of range for dim 1 of size 3")
check.mistake("write_unnamed", function() local y = A * 1; y[A:gt(2)] = 0 end, "immutable")

check.summary()
