-- Sorting and scans against numpy: sort, argsort, topk, unique, searchsorted, cumsum, cumprod,
-- cummax, cummin, logcumsumexp; a sharded sort and scan checked element by element; gradients
-- by finite differences; bad inputs. The expected values are numpy's for the same inputs
-- (printed by tests/lua/ops/sort_scan_numpy.py). Runs on 1 rank, 3 virtual ranks and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local gradcheck = require "gradcheck"
local test, eq, near = check.test, check.eq, check.near

-- numpy 1.24.2 on A = (arange(1,25)*7 % 11 - 5).reshape(2,3,4), B = A/4 + 0.25
local np = {
  sort1 = {{{-2.0, -2.0, 1.0, -3.0}, {-3.0, 0.0, -4.0, -4.0}, {-1.0, -5.0, -5.0, -2.0}}, {{2.0, 5.0, 5.0, 1.0}, {4.0, 4.0, 0.0, 3.0}, {3.0, -1.0, 2.0, 2.0}}},
  argsort1 = {{{2, 1, 2, 2}, {1, 2, 2, 1}, {2, 2, 1, 2}}, {{1, 2, 1, 1}, {2, 1, 1, 2}, {1, 1, 2, 1}}},
  argsort_desc1 = {{{1, 2, 1, 1}, {2, 1, 1, 2}, {1, 1, 2, 1}}, {{2, 1, 2, 2}, {1, 2, 2, 1}, {2, 2, 1, 2}}},
  cumsum1 = {{{2.0, -2.0, 5.0, 1.0}, {-3.0, 4.0, 0.0, -4.0}, {3.0, -1.0, -5.0, 2.0}}, {{0.0, 3.0, 6.0, -2.0}, {1.0, 4.0, -4.0, -1.0}, {2.0, -6.0, -3.0, 0.0}}},
  cumprod1 = {{{0.75, -0.25, 1.5, 0.5}, {-0.5, 1.25, 0.25, -0.75}, {1.0, 0.0, -1.0, 0.75}}, {{-0.1875, -0.375, 0.75, -0.25}, {-0.625, 0.3125, -0.1875, -0.75}, {0.0, -0.0, -0.75, -0.1875}}},
  cummax1 = {{{2.0, -2.0, 5.0, 1.0}, {-3.0, 4.0, 0.0, -4.0}, {3.0, -1.0, -5.0, 2.0}}, {{2.0, 5.0, 5.0, 1.0}, {4.0, 4.0, 0.0, 3.0}, {3.0, -1.0, 2.0, 2.0}}},
  cummin1 = {{{2.0, -2.0, 5.0, 1.0}, {-3.0, 4.0, 0.0, -4.0}, {3.0, -1.0, -5.0, 2.0}}, {{-2.0, -2.0, 1.0, -3.0}, {-3.0, 0.0, -4.0, -4.0}, {-1.0, -5.0, -5.0, -2.0}}},
  lcse1 = {{{0.75, -0.25, 1.5, 0.5}, {-0.5, 1.25, 0.25, -0.75}, {1.0, 0.0, -1.0, 0.75}}, {{1.0632616875182228, 1.6602241504380872, 1.8132616875182228, 0.8132616875182228}, {1.4102241504380872, 1.5632616875182228, 0.5632616875182228, 1.1602241504380872}, {1.3132616875182228, 0.31326168751822286, 0.9102241504380872, 1.0632616875182228}}},
  sort2 = {{{-3.0, -2.0, -5.0, -4.0}, {2.0, -1.0, 0.0, 1.0}, {3.0, 4.0, 5.0, 2.0}}, {{-2.0, -5.0, -4.0, -3.0}, {-1.0, 0.0, 1.0, -2.0}, {4.0, 5.0, 2.0, 3.0}}},
  argsort2 = {{{2, 1, 3, 2}, {1, 3, 2, 1}, {3, 2, 1, 3}}, {{1, 3, 2, 1}, {3, 2, 1, 3}, {2, 1, 3, 2}}},
  argsort_desc2 = {{{3, 2, 1, 3}, {1, 3, 2, 1}, {2, 1, 3, 2}}, {{2, 1, 3, 2}, {3, 2, 1, 3}, {1, 3, 2, 1}}},
  cumsum2 = {{{2.0, -2.0, 5.0, 1.0}, {-1.0, 2.0, 5.0, -3.0}, {2.0, 1.0, 0.0, -1.0}}, {{-2.0, 5.0, 1.0, -3.0}, {2.0, 5.0, -3.0, 0.0}, {1.0, 0.0, -1.0, -2.0}}},
  cumprod2 = {{{0.75, -0.25, 1.5, 0.5}, {-0.375, -0.3125, 0.375, -0.375}, {-0.375, -0.0, -0.375, -0.28125}}, {{-0.25, 1.5, 0.5, -0.5}, {-0.3125, 0.375, -0.375, -0.5}, {-0.0, -0.375, -0.28125, 0.125}}},
  cummax2 = {{{2.0, -2.0, 5.0, 1.0}, {2.0, 4.0, 5.0, 1.0}, {3.0, 4.0, 5.0, 2.0}}, {{-2.0, 5.0, 1.0, -3.0}, {4.0, 5.0, 1.0, 3.0}, {4.0, 5.0, 2.0, 3.0}}},
  cummin2 = {{{2.0, -2.0, 5.0, 1.0}, {-3.0, -2.0, 0.0, -4.0}, {-3.0, -2.0, -5.0, -4.0}}, {{-2.0, 5.0, 1.0, -3.0}, {-2.0, 0.0, -4.0, -3.0}, {-2.0, -5.0, -4.0, -3.0}}},
  lcse2 = {{{0.75, -0.25, 1.5, 0.5}, {1.001929081345373, 1.4514132779827524, 1.751929081345373, 0.751929081345373}, {1.6941121864019144, 1.6618678712750954, 1.813780863337258, 1.4441121864019144}}, {{-0.25, 1.5, 0.5, -0.5}, {1.4514132779827524, 1.751929081345373, 0.751929081345373, 1.2014132779827524}, {1.6618678712750954, 1.813780863337258, 1.4441121864019144, 1.4118678712750954}}},
  sort3 = {{{-2.0, 1.0, 2.0, 5.0}, {-4.0, -3.0, 0.0, 4.0}, {-5.0, -1.0, 2.0, 3.0}}, {{-3.0, -2.0, 1.0, 5.0}, {-4.0, 0.0, 3.0, 4.0}, {-5.0, -2.0, -1.0, 2.0}}},
  argsort3 = {{{2, 4, 1, 3}, {4, 1, 3, 2}, {3, 2, 4, 1}}, {{4, 1, 3, 2}, {3, 2, 4, 1}, {2, 4, 1, 3}}},
  argsort_desc3 = {{{3, 1, 4, 2}, {2, 3, 1, 4}, {1, 4, 2, 3}}, {{2, 3, 1, 4}, {1, 4, 2, 3}, {3, 1, 4, 2}}},
  cumsum3 = {{{2.0, 0.0, 5.0, 6.0}, {-3.0, 1.0, 1.0, -3.0}, {3.0, 2.0, -3.0, -1.0}}, {{-2.0, 3.0, 4.0, 1.0}, {4.0, 4.0, 0.0, 3.0}, {-1.0, -6.0, -4.0, -6.0}}},
  cumprod3 = {{{0.75, -0.1875, -0.28125, -0.140625}, {-0.5, -0.625, -0.15625, 0.1171875}, {1.0, 0.0, -0.0, -0.0}}, {{-0.25, -0.375, -0.1875, 0.09375}, {1.25, 0.3125, -0.234375, -0.234375}, {0.0, -0.0, -0.0, 0.0}}},
  cummax3 = {{{2.0, 2.0, 5.0, 5.0}, {-3.0, 4.0, 4.0, 4.0}, {3.0, 3.0, 3.0, 3.0}}, {{-2.0, 5.0, 5.0, 5.0}, {4.0, 4.0, 4.0, 4.0}, {-1.0, -1.0, 2.0, 2.0}}},
  cummin3 = {{{2.0, -2.0, -2.0, -2.0}, {-3.0, -3.0, -3.0, -4.0}, {3.0, -1.0, -5.0, -5.0}}, {{-2.0, -2.0, -2.0, -3.0}, {4.0, 0.0, -4.0, -4.0}, {-1.0, -5.0, -5.0, -5.0}}},
  lcse3 = {{{0.75, 1.0632616875182228, 1.99843345474315, 2.200132693633123}, {-0.5, 1.4102241504380872, 1.682855466878769, 1.766999725429153}, {1.0, 1.3132616875182228, 1.4076059644443804, 1.825059046981851}}, {{-0.25, 1.6602241504380872, 1.932855466878769, 2.016999725429153}, {1.25, 1.5632616875182228, 1.6576059644443804, 2.075059046981851}, {0.0, 0.31326168751822286, 1.24843345474315, 1.450132693633123}}},
  topk_v = {{{5.0, 2.0}, {4.0, 0.0}, {3.0, 2.0}}, {{5.0, 1.0}, {4.0, 3.0}, {2.0, -1.0}}},
  topk_i = {{{3, 1}, {2, 3}, {1, 4}}, {{2, 3}, {1, 4}, {3, 1}}},
  topk_small_v = {{{-3.0, -2.0, -5.0, -4.0}, {2.0, -1.0, 0.0, 1.0}}, {{-2.0, -5.0, -4.0, -3.0}, {-1.0, 0.0, 1.0, -2.0}}},
  topk_small_i = {{{2, 1, 3, 2}, {1, 3, 2, 1}}, {{1, 3, 2, 1}, {3, 2, 1, 3}}},
  unique = {-5.0, -4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0},
  unique_counts = {2, 2, 2, 3, 2, 2, 2, 3, 2, 2, 2},
  ss_left = {{1, 3, 5}, {6, 7, 2}},
  ss_right = {{1, 5, 6}, {7, 7, 3}},
  icumsum = {{3, 1, 6}, {1, 2, -2}},
  icumprod = {{3, -2, 5}, {3, -2, -20}},
  bcumsum = {1, 1, 2, 3},
}

local A = (tp.arange(1, 24, 1, {dtype = "f64"}) * 7 % 11 - 5):reshape{2, 3, 4}
local B = A / 4 + 0.25
-- The same values through a sharded producer: a matmul by the identity, so that plans split it.
local As = tp.einsum("bij,jk->bik", A, tp.eye(4, {dtype = "f64"}))

test("sort", function()
  for _, a in ipairs{A, As} do
    for d = 1, 3 do
      local v, i = a:sort(d)
      eq(v.dtype, "f64")
      eq(i.dtype, "i64")
      eq(v:totable(), np["sort" .. d], "sort values along " .. d)
      eq(i:totable(), np["argsort" .. d], "stable indices along " .. d)
      eq(tp.argsort(a, d):totable(), np["argsort" .. d], "argsort along " .. d)
      eq(a:argsort(d - 4, {descending = true}):totable(), np["argsort_desc" .. d], "descending along " .. d)
    end
    eq(tp.sort(a):totable(), np.sort3, "the last dim by default")
    local v, i = tp.sort(a, {descending = true})
    eq(i:totable(), np.argsort_desc3, "options without a dim")
    eq(v:totable(), (-tp.sort(-a)):totable(), "descending values")
  end
  local v, i = tp.sort(tp.tensor({3, -1, 2}, {dtype = "i32"}))
  eq(v.dtype, "i32")
  eq(v:totable(), {-1, 2, 3})
  eq(i:totable(), {2, 3, 1})
  eq(tp.sort(tp.tensor{true, false, true}):totable(), {false, true, true})
  -- NaN sorts after every number (numpy's order); descending puts it first.
  eq(tp.argsort(tp.tensor{3, 0 / 0, 1}):totable(), {3, 1, 2})
  eq(tp.argsort(tp.tensor{3, 0 / 0, 1}, {descending = true}):totable(), {2, 1, 3})
end)

test("topk", function()
  for _, a in ipairs{A, As} do
    local v, i = tp.topk(a, 2)
    eq(v:totable(), np.topk_v)
    eq(i:totable(), np.topk_i)
    v, i = a:topk(2, 2, {largest = false})
    eq(v:totable(), np.topk_small_v)
    eq(i:totable(), np.topk_small_i)
    eq(a:topk(4):totable(), tp.sort(a, {descending = true}):totable(), "k = size is the whole sort")
  end
end)

test("scans", function()
  for _, a in ipairs{A, As} do
    local b = a / 4 + 0.25
    for d = 1, 3 do
      eq(a:cumsum(d):totable(), np["cumsum" .. d], "cumsum along " .. d)
      eq(tp.cumprod(b, d):totable(), np["cumprod" .. d], "cumprod along " .. d)
      near(b:logcumsumexp(d):totable(), np["lcse" .. d], 1e-12, "logcumsumexp along " .. d)
      local mx, mi = a:cummax(d)
      local mn, ni = tp.cummin(a, d)
      eq(mx:totable(), np["cummax" .. d], "cummax along " .. d)
      eq(mn:totable(), np["cummin" .. d], "cummin along " .. d)
      eq(mi.dtype, "i64")
      -- The index is where the running extreme is, and the latest such place (as torch).
      local at = tp.tensor(mi:totable(), {dtype = "i64"})
      local x, m, n = a:totable(), mx:totable(), ni:totable()
      for p = 1, 2 do
        for q = 1, 3 do
          for r = 1, 4 do
            local pos = {p, q, r}
            local k = at:totable()[p][q][r]
            local src = {p, q, r}
            src[d] = k
            eq(x[src[1]][src[2]][src[3]], m[p][q][r], "cummax index")
            check.truthy(k <= pos[d], "an index at or before the element")
            for j = k + 1, pos[d] do
              local o = {p, q, r}
              o[d] = j
              check.truthy(x[o[1]][o[2]][o[3]] < m[p][q][r], "no later tie of the maximum")
            end
            src[d] = n[p][q][r]
            eq(x[src[1]][src[2]][src[3]], mn:totable()[p][q][r], "cummin index")
          end
        end
      end
    end
    eq(a:cumsum(-1):totable(), np.cumsum3, "negative dim")
  end
  near(tp.logcumsumexp(B:cast("f32"), 3):totable(), np.lcse3, 1e-6, "f32")
  eq(tp.tensor{1, 2, 3}:cumsum():totable(), {1, 3, 6}, "a 1-D x needs no dim")
  local I = tp.tensor({{3, -2, 5}, {1, 1, -4}}, {dtype = "i32"})
  eq(I:cumsum(2).dtype, "i64")
  eq(I:cumsum(2):totable(), np.icumsum)
  eq(I:cumprod(1):totable(), np.icumprod)
  eq(tp.tensor{true, false, true, true}:cumsum():totable(), np.bcumsum)
  eq(tp.tensor{true, false, true, true}:cumsum().dtype, "i64")
  eq(I:cummax(2):totable(), {{3, 3, 5}, {1, 1, 1}})
  eq(I:cummax(2).dtype, "i32")
  eq(I:logcumsumexp(2).dtype, "f64", "integers give floats, as exp")
  local inf = math.huge
  eq(tp.logcumsumexp(tp.tensor({-inf, -inf, 0}, {dtype = "f64"})):totable(), {-inf, -inf, 0})
  near(tp.logcumsumexp(tp.tensor({1000, 1000}, {dtype = "f64"})):totable(), {1000, 1000 + math.log(2)}, 1e-12)
end)

test("unique", function()
  for _, a in ipairs{A, As} do
    local u, c = tp.unique(a, {return_counts = true})
    eq(u.dtype, "f64")
    eq(u:totable(), np.unique)
    eq(c:totable(), np.unique_counts)
    eq(a:unique():totable(), np.unique)
    eq((u * 2):sum():item(), 0, "a tensor like any other")
  end
  eq(tp.unique(tp.tensor({5, 5, 5}, {dtype = "i32"})):totable(), {5})
  eq(tp.unique(tp.tensor{true, false, true}):totable(), {false, true})
  local u, c = tp.unique(tp.tensor{0 / 0, 1, 0 / 0}, {return_counts = true})
  eq(u.shape, {2}, "NaNs are one value")
  eq(c:totable(), {1, 2})
end)

test("searchsorted", function()
  local s = tp.tensor({-4, -1, 0, 0, 2.5, 7}, {dtype = "f64"})
  local v = tp.tensor({{-5, 0, 2.5}, {7, 8, -1}}, {dtype = "f64"})
  eq(tp.searchsorted(s, v):totable(), np.ss_left)
  eq(tp.searchsorted(s, v, {right = true}):totable(), np.ss_right)
  eq(s:searchsorted(v, {side = "right"}):totable(), np.ss_right)
  eq(tp.searchsorted(s, v).dtype, "i64")
  eq(tp.searchsorted(s, 0):item(), 3, "a number is a scalar value")
  eq(tp.searchsorted(tp.tensor({1, 5, 9}, {dtype = "i32"}), tp.tensor{4.5, 9.5}):totable(), {2, 4})
  eq(tp.searchsorted(tp.sort(As:reshape{24}), As):totable(),
     tp.searchsorted(tp.sort(A:reshape{24}), A):totable(), "a sharded sequence and values")
end)

-- Big enough that a plan splits the free dims over ranks; checked element by element.
test("sharded", function()
  local x = (tp.arange(1, 6000, 1, {dtype = "f64"}) * 7919 % 1009):reshape{60, 100}
  local xt = x:totable()
  for d = 1, 2 do
    local v, i = x:sort(d, {descending = d == 2})
    local vt, it = v:totable(), i:totable()
    for a = 1, 60 do
      for b = 1, 100 do
        local src = {a, b}
        src[d] = it[a][b]
        eq(xt[src[1]][src[2]], vt[a][b], "values are x at the indices")
        local nxt = {a, b}
        nxt[d] = nxt[d] + 1
        if nxt[d] <= (d == 1 and 60 or 100) then
          local w, j = vt[nxt[1]][nxt[2]], it[nxt[1]][nxt[2]]
          local pv = vt[a][b]
          check.truthy(d == 1 and pv <= w or d == 2 and pv >= w, "ordered")
          if pv == w then check.truthy(it[a][b] < j, "stable") end
        end
      end
    end
  end
  local c = x:cumsum(1):totable()
  for b = 1, 100 do
    local s = 0
    for a = 1, 60 do
      s = s + xt[a][b]
      eq(c[a][b], s, "cumsum")
    end
  end
  local tv = tp.topk(x, 3, 1):totable()
  eq(tv[1], x:max(1):totable(), "topk's first row is the max")
end)

test("grad", function()
  gradcheck.check("cumsum", function(x) return x:cumsum(2) end, {{3, 4}})
  gradcheck.check("cumprod", function(x) return x:cumprod(1) end, {{4, 3}}, {lo = 0.5, hi = 2})
  gradcheck.check("cummax", function(x) return (x:cummax(2)) end, {{3, 5}})
  gradcheck.check("cummin", function(x) return (tp.cummin(x, 1)) end, {{5, 2}})
  gradcheck.check("logcumsumexp", function(x) return x:logcumsumexp(2) end, {{2, 5}})
  gradcheck.check("sort", function(x) return (x:sort(1)) end, {{4, 3}})
  gradcheck.check("sort descending", function(x) return (x:sort(2, {descending = true})) end, {{3, 4}})
  gradcheck.check("topk", function(x) return (x:topk(2)) end, {{3, 5}})
  local w = tp.tensor({0.5, -1, 2}, {dtype = "f64"})
  eq(tp.grad((w:cumsum() * tp.tensor{1, 2, 3}):sum(), {w})[1]:totable(), {6, 5, 3})
  local _, i = w:sort()
  eq(tp.grad((w:sort() * tp.tensor{1, 2, 3}):sum(), {w})[1]:totable(), {2, 1, 3}, "the weight at each rank")
  eq(i:totable(), {2, 1, 3})
end)

local M = A[1]
check.mistake("sort_dim", function() return A:sort(4) end, "tp.sort", "dim 4 out of range", "{2,3,4}")
check.mistake("sort_scalar", function() return tp.sort(tp.tensor(3)) end, "tp.sort", "at least 1 dimension", "{}")
check.mistake("sort_option", function() return tp.sort(A, {descend = true}) end, "tp.sort", "descend")
check.mistake("sort_unstable", function() return A:sort(1, {stable = false}) end, "tp.sort", "stable")
check.mistake("topk_k", function() return tp.topk(M, 5) end, "tp.topk", "k must be in 0..4", "{3,4}", "got 5")
test("topk_k0", function() eq(M:topk(0, 1).shape, {0, 4}) end)  -- k = 0 is empty, as torch
check.mistake("cumsum_dim_needed", function() return M:cumsum() end, "tp.cumsum", "dim is required", "{3,4}")
check.mistake("cumprod_dim", function() return tp.cumprod(M, -3) end, "tp.cumprod", "dim -3 out of range", "{3,4}")
check.mistake("cummax_dim", function() return M:cummax(3) end, "tp.cummax", "dim 3", "{3,4}")
check.mistake("logcumsumexp_scalar", function() return tp.logcumsumexp(tp.tensor(1)) end, "tp.logcumsumexp",
              "scalar")
check.mistake("searchsorted_2d", function() return tp.searchsorted(M, 1) end, "tp.searchsorted",
              "sorted_sequence must be 1-D", "{3,4}")
check.mistake("searchsorted_bool", function() return tp.searchsorted(tp.tensor{1, 2}, tp.tensor{true}) end,
              "tp.searchsorted", "f32", "bool", "both numeric")
-- A long line on a mesh: scanned in chunks with a carry per chunk (engine/plan/split_scan.hpp),
-- on whatever ranks this runs; the values are exact (integers, and extremes), element by element.
test("split_line", function()
  local n = 5003
  local x = tp.arange(1, n, 1, {dtype = "i64"}) * 7919 % 1009 - 500
  local xt, c, m, mi, lo, loi = x:totable(), x:cumsum(1):totable(), nil, nil, nil, nil
  local vmax, imax = x:cummax(1)
  local vmin, imin = x:cummin(1)
  vmax, imax, vmin, imin = vmax:totable(), imax:totable(), vmin:totable(), imin:totable()
  local s = 0
  for k = 1, n do
    s = s + xt[k]
    eq(c[k], s, "cumsum")
    if not m or xt[k] >= m then m, mi = xt[k], k end  -- a tie moves to the later element
    if not lo or xt[k] <= lo then lo, loi = xt[k], k end
    eq({vmax[k], imax[k], vmin[k], imin[k]}, {m, mi, lo, loi}, "cummax/cummin at " .. k)
  end
  -- The first chunk's carry is the type's own extreme: -128 for i8 (an i64 one wrapped to 0).
  for _, dt in ipairs{"i8", "u8", "i32"} do
    local small = (x % 100 - (dt == "u8" and 0 or 120)):cast(dt)
    local st, hi, low = small:totable(), small:cummax(1):totable(), small:cummin(1):totable()
    local a, b = st[1], st[1]
    for k = 1, n do
      a, b = math.max(a, st[k]), math.min(b, st[k])
      eq({hi[k], low[k]}, {a, b}, dt .. " cummax/cummin at " .. k)
    end
  end
  local f = tp.arange(1, n, 1, {dtype = "f64"}) / n
  near(f:logcumsumexp(1):totable()[n], math.log(f:exp():sum():item()), 1e-12)
  near(f:cumprod(1):totable()[7], 5040 / n ^ 7, 1e-12)
  -- Planned on 4 ranks, the chunks' totals and carries move (an all-gather of 4 totals, 96
  -- bytes, and the 3 elements the padding shifts across a boundary), not the line (40 kB of f64).
  local cost = tp.plan(tp.rand({n}, {seed = 2, dtype = "f64"}):cumsum(1), {mesh = 4}):cost()
  check.truthy(cost.bytes_moved <= 128, "bytes moved: " .. cost.bytes_moved)
end)

-- One long line on several ranks is a sample sort (engine/ir/build/sample_sort.hpp): checked
-- element by element against a stable sort in Lua, with ties, NaNs and a length that does not
-- divide into the ranks; on one rank the same calls are the plain sort.
test("sample_sort", function()
  local function lua_sorted(xt)
    local ref = {}
    for k = 1, #xt do ref[k] = k end
    table.sort(ref, function(a, b)
      local xa, xb = xt[a], xt[b]
      if (xa ~= xa) ~= (xb ~= xb) then return xb ~= xb end  -- NaN last
      if xa == xa and xa ~= xb then return xa < xb end
      return a < b  -- stable
    end)
    return ref
  end
  local nan = 0 / 0
  local u = tp.rand({2999}, {seed = 21, dtype = "f64"})
  local cases = {
    tp.arange(1, 5003, 1, {dtype = "i64"}) * 7919 % 1009 - 500,
    (tp.rand({4096}, {seed = 20, dtype = "f64"}) * 10):floor():reshape{1, 4096},
    tp.where(u:gt(0.9), nan, u),
    tp.full({700}, 3, {dtype = "i32"}),
  }
  -- The sample sort takes lines of TAPESTRY_SAMPLE_SORT_MIN (2^20 by default; the ctests
  -- lua.ranks3.sample_sort and mpi.np2.sample_sort set 64).
  local sampled = (tp.mesh().ranks or 1) > 1 and tonumber(os.getenv("TAPESTRY_SAMPLE_SORT_MIN") or "") ~= nil
  for c, x in ipairs(cases) do
    local before = tp.stats().observations
    local v, i = x:sort()
    local after = tp.stats().observations
    if sampled then check.truthy(after - before >= 1, "case " .. c .. ": the bucket sizes are observed") end
    local xt, vt, it = x:reshape{-1}:totable(), v:reshape{-1}:totable(), i:reshape{-1}:totable()
    local ref = lua_sorted(xt)
    for k = 1, #xt do
      eq(it[k], ref[k], "case " .. c .. " index " .. k)
      local a, b = vt[k], xt[ref[k]]
      check.truthy(a == b or (a ~= a and b ~= b), "case " .. c .. " value " .. k)
    end
    eq(x:argsort():reshape{-1}:totable(), it, "argsort")
  end
  -- Descending (a stable sort of the reversed line, reversed: ties in x's order, NaN first),
  -- and batches of fewer lines than ranks, along a dim that is not the last.
  local function lua_desc(xt)
    local ref = {}
    for k = 1, #xt do ref[k] = k end
    table.sort(ref, function(a, b)
      local xa, xb = xt[a], xt[b]
      if (xa ~= xa) ~= (xb ~= xb) then return xa ~= xa end  -- NaN first
      if xa == xa and xa ~= xb then return xa > xb end
      return a < b
    end)
    return ref
  end
  for c, x in ipairs(cases) do
    local before = tp.stats().observations
    local v, i = x:sort(-1, {descending = true})
    if sampled then check.truthy(tp.stats().observations > before, "descending case " .. c .. " observed") end
    local xt, vt, it = x:reshape{-1}:totable(), v:reshape{-1}:totable(), i:reshape{-1}:totable()
    local ref = lua_desc(xt)
    for k = 1, #xt do
      eq(it[k], ref[k], "descending case " .. c .. " index " .. k)
      local a, b = vt[k], xt[ref[k]]
      check.truthy(a == b or (a ~= a and b ~= b), "descending case " .. c .. " value " .. k)
    end
    -- topk of the same line: each chunk's k best, then the best of those.
    for _, k in ipairs{1, 7, #xt} do
      local tv, ti = tp.topk(x:reshape{-1}, k)
      local sv, si = tp.topk(x:reshape{-1}, k, {largest = false})
      local ascending = lua_sorted(xt)
      local tvt, tit, svt, sit = tv:totable(), ti:totable(), sv:totable(), si:totable()
      for j = 1, k do
        eq(tit[j], ref[j], "topk case " .. c .. " k " .. k .. " at " .. j)
        eq(sit[j], ascending[j], "topk smallest case " .. c .. " k " .. k .. " at " .. j)
        check.truthy(tvt[j] == xt[ref[j]] or tvt[j] ~= tvt[j], "topk value")
        check.truthy(svt[j] == xt[ascending[j]] or svt[j] ~= svt[j], "topk smallest value")
      end
    end
  end
  local rows = (tp.rand({2, 1500}, {seed = 23, dtype = "f64"}) * 50):floor():t()  -- {1500, 2}
  for _, desc in ipairs{false, true} do
    local before = tp.stats().observations
    local v, i = rows:sort(1, {descending = desc})
    -- Two lines on 3 or more ranks: the bucket sizes of both are observed (on 2, whole lines).
    if sampled and tp.mesh().ranks > 2 then
      check.truthy(tp.stats().observations > before, "two lines: the bucket sizes are observed")
    end
    eq(v.shape, {1500, 2}, "batched shape")
    local rt, vt, it = rows:totable(), v:totable(), i:totable()
    for col = 1, 2 do
      local xt = {}
      for r = 1, 1500 do xt[r] = rt[r][col] end
      local ref = desc and lua_desc(xt) or lua_sorted(xt)
      for r = 1, 1500 do
        eq(it[r][col], ref[r], "batched column " .. col .. " row " .. r)
        eq(vt[r][col], xt[ref[r]], "batched value")
      end
      local tv, ti = tp.topk(rows, 5, 1)
      for r = 1, 5 do eq(ti:totable()[r][col], lua_desc(xt)[r], "batched topk") end
    end
  end
  -- The gradient goes back to each value's place, through the buckets.
  local x = tp.detach(tp.rand({600}, {seed = 22, dtype = "f64"}))
  local w = tp.arange(1, 600, 1, {dtype = "f64"})
  local g = tp.grad((x:sort() * w):sum(), {x})[1]:totable()
  local it = x:argsort():totable()
  for k = 1, 600 do eq(g[it[k]], k, "grad at " .. it[k]) end
  g = tp.grad((x:sort({descending = true}) * w):sum(), {x})[1]:totable()
  it = x:argsort({descending = true}):totable()
  for k = 1, 600 do eq(g[it[k]], k, "descending grad at " .. it[k]) end
  g = tp.grad((tp.topk(x, 5) * w[{{1, 5}}]):sum(), {x})[1]:totable()
  local tk = select(2, tp.topk(x, 5)):totable()
  for k = 1, 5 do eq(g[tk[k]], k, "topk grad at " .. tk[k]) end
end)

-- tp.unique of a long line on several ranks (engine/ir/build/unique.hpp): each chunk sorted and
-- deduplicated where it lies, the chunks' distinct values merged in buckets across ranks.
-- Checked against a count in Lua (NaNs one value, last) with ties, NaNs, the padding's value
-- (the type's maximum) among x's, one value, all distinct; on one rank the same calls.
test("unique_distributed", function()
  local nan = 0 / 0
  local u = tp.rand({2999}, {seed = 21, dtype = "f64"})
  local cases = {
    tp.arange(1, 5003, 1, {dtype = "i64"}) * 7919 % 1009 - 500,
    (tp.rand({4096}, {seed = 20, dtype = "f64"}) * 10):floor():reshape{64, 64},
    tp.where(u:gt(0.9), nan, (u * 300):floor()),
    tp.full({700}, 3, {dtype = "i32"}),
    tp.cat({tp.full({50}, math.maxinteger, {dtype = "i64"}), tp.arange(1, 651, 1, {dtype = "i64"}) % 7}),
    tp.rand({3001}, {seed = 24, dtype = "f32"}),
    tp.arange(1, 2000, 1, {dtype = "i32"}):flip(1),
  }
  local sampled = (tp.mesh().ranks or 1) > 1 and tonumber(os.getenv("TAPESTRY_SAMPLE_SORT_MIN") or "") ~= nil
  for c, x in ipairs(cases) do
    local counts, nans = {}, 0
    for _, v in ipairs(x:reshape{-1}:totable()) do
      if v ~= v then nans = nans + 1 else counts[v] = (counts[v] or 0) + 1 end
    end
    local want = {}
    for v in pairs(counts) do want[#want + 1] = v end
    table.sort(want)
    local before = tp.stats().observations
    local got, n = tp.unique(x, {return_counts = true})
    local after = tp.stats().observations
    eq(got.dtype, x.dtype, "case " .. c .. " dtype")
    eq(n.dtype, "i64", "case " .. c .. " counts dtype")
    local gt, nt = got:totable(), n:totable()
    eq(#gt, #want + (nans > 0 and 1 or 0), "case " .. c .. " distinct values")
    for k, v in ipairs(want) do
      eq(gt[k], v, "case " .. c .. " value " .. k)
      eq(nt[k], counts[v], "case " .. c .. " count " .. k)
    end
    if nans > 0 then
      check.truthy(gt[#gt] ~= gt[#gt], "case " .. c .. ": NaN last")
      eq(nt[#nt], nans, "case " .. c .. ": the NaNs counted as one value")
    end
    eq(#x:unique():totable(), #gt, "case " .. c .. " without counts")
    if sampled then
      check.truthy(after - before >= 1, "case " .. c .. ": the counts are observed")
    end
  end
  if sampled then
    -- Ten values in 4096 computed on the ranks: the chunks' ten-value tables move, not the
    -- 32 kB line (gathered, 2/3 of it would).
    local x = (tp.rand({4096}, {seed = 25, dtype = "f64"}) * 10):floor()
    local before = tp.stats().bytes_moved
    eq(tp.unique(x).shape, {10})
    local moved = tp.stats().bytes_moved - before
    check.truthy(moved < 4096 * 8 / 4, "ten values moved " .. moved .. " bytes")
  end
  -- What follows stays lazy and sharded like any tensor.
  local v, n = tp.unique(cases[1], {return_counts = true})
  eq((v * n):sum():item(), cases[1]:sum():item(), "sum of value times count is x's sum")
end)

check.mistake("searchsorted_side", function() return tp.searchsorted(tp.tensor{1, 2}, 1, {side = "up"}) end,
              "tp.searchsorted", "side", "up")
check.mistake("unique_option", function() return tp.unique(A, {counts = true}) end, "tp.unique", "counts")
check.summary()
