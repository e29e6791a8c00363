-- Contractions by index letters: tp.einsum against a naive loop nest, tp.einsum_path's
-- order, tp.tensordot and tp.outer against matmul; every dtype, broadcasting sizes of 1.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, eq, same, near = check.test, check.eq, check.same, check.near

-- The reference: every assignment of the letters visited once, products summed into the
-- output (bool: or of ands), as numpy.einsum with optimize=False. The spec is explicit.
local function naive(spec, ...)
  local ops = {...}
  local lhs, out = spec:match("^(.*)%->(.*)$")
  local terms = {}
  for t in (lhs .. ","):gmatch("([^,]*),") do terms[#terms + 1] = t end
  local t = ops[1].dtype
  for i = 2, #ops do t = ref.promote(t, ops[i].dtype) end
  local size, letters = {}, {}
  for i, term in ipairs(terms) do
    ops[i] = ref.cast(ops[i], t)
    for d = 1, #term do
      local c, n = term:sub(d, d), ops[i].shape[d]
      if not size[c] then letters[#letters + 1] = c end
      if not size[c] or size[c] == 1 then size[c] = n end
    end
  end
  local oshape = {}
  for c in out:gmatch(".") do oshape[#oshape + 1] = size[c] end
  local acc = {}
  for p = 1, ref.numel(oshape) do acc[p] = 0 end
  if t == "bool" then for p = 1, #acc do acc[p] = false end end
  local idx = {}
  for _, c in ipairs(letters) do idx[c] = 1 end
  local function pos(term, shape)  -- flat 1-based position of idx in an operand
    local p = 0
    for d = 1, #term do
      local c = term:sub(d, d)
      local i = shape[d] == 1 and 1 or idx[c]
      p = p * shape[d] + (i - 1)
    end
    return p + 1
  end
  repeat
    local v = (t == "bool") or 1
    for i, term in ipairs(terms) do
      local x = ops[i].data[pos(term, ops[i].shape)]
      if t == "bool" then v = v and x else v = v * x end
    end
    local p = pos(out, oshape)
    if t == "bool" then acc[p] = acc[p] or v else acc[p] = acc[p] + v end
    local k = #letters  -- odometer over the letters
    while k >= 1 do
      local c = letters[k]
      idx[c] = idx[c] + 1
      if idx[c] <= size[c] then break end
      idx[c] = 1
      k = k - 1
    end
  until k == 0
  for p = 1, #acc do acc[p] = ref.convert(acc[p], t) end
  return ref.new(t, oshape, acc)
end

local TOL = {f32 = 1e-4, f64 = 1e-12, i32 = 0, i64 = 0, bool = 0}

local CASES = {
  {"ij,jk->ik", {3, 4}, {4, 5}},                      -- matrix product
  {"bij,bjk->bik", {2, 3, 4}, {2, 4, 5}},             -- batched matmul
  {"ij->", {3, 4}},                                   -- sum of everything
  {"ii->", {4, 4}},                                   -- trace
  {"ii->i", {3, 3}},                                  -- diagonal
  {"ij->ji", {3, 4}},                                 -- transpose
  {"ij->j", {3, 4}},                                  -- column sums
  {"i,j->ij", {3}, {4}},                              -- outer
  {"i,i->", {5}, {5}},                                -- dot
  {"ij,ij->i", {4, 3}, {4, 3}},                       -- batched dot (mul + sum)
  {"ij,ij->ij", {3, 4}, {3, 4}},                      -- elementwise
  {"ij,jk,kl->il", {3, 4}, {4, 5}, {5, 2}},           -- three-operand chain
  {"ij,jk,kl,lm->im", {2, 3}, {3, 4}, {4, 3}, {3, 2}}, -- four-operand chain
  {"ijk,jil->kl", {2, 3, 4}, {3, 2, 5}},              -- permuted contraction
  {"abc,cd,db->a", {2, 3, 4}, {4, 2}, {2, 3}},        -- a triangle
  {"ij,jk->ik", {3, 1}, {4, 5}},                      -- size 1 broadcast, summed letter
  {"ij,ij->ij", {3, 1}, {3, 4}},                      -- size 1 broadcast, kept letter
  {"bij,bjk->bik", {1, 3, 4}, {2, 4, 5}},             -- size 1 broadcast batch
  {"iij,jk->ik", {3, 3, 2}, {2, 4}},                  -- diagonal inside a product
  {"ab,bc,cd,de,ef,fg,gh->ah", {2, 3}, {3, 2}, {2, 3}, {3, 2}, {2, 3}, {3, 2}, {2, 2}},  -- greedy
}

local seed = 900
for _, dt in ipairs(ref.dtypes) do
  for _, c in ipairs(CASES) do
    seed = seed + 10
    local s = seed
    test("einsum." .. c[1] .. " " .. dt .. " " .. check.show({table.unpack(c, 2)}), function()
      local xs, rs = {}, {}
      for i = 2, #c do xs[i - 1], rs[i - 1] = gen.pair(c[i], dt, s + i, -3, 3) end
      same(tp.einsum(c[1], table.unpack(xs)), naive(c[1], table.unpack(rs)), TOL[dt])
    end)
  end
end

test("einsum.implicit_output", function()
  local a, ra = gen.pair({3, 4}, "f64", 11)
  local b, rb = gen.pair({4, 2}, "f64", 12)
  same(tp.einsum("ij,jk", a, b), naive("ij,jk->ik", ra, rb))
  same(tp.einsum("ba", a), naive("ba->ab", ra))   -- sorted letters: a transpose
  same(tp.einsum("ij", a), naive("ij->ij", ra))
  eq(tp.einsum("ii", tp.eye(4)):item(), 4)       -- trace
  eq(tp.einsum(" i j , j k -> i k ", a, b).shape, {3, 2})
end)

test("einsum.matches_matmul", function()
  local a = tp.randn({16, 8}, {seed = 1, dtype = "f64"})
  local b = tp.randn({5, 8, 7}, {seed = 2, dtype = "f64"})
  near(tp.einsum("ij,bjk->bik", a, b):totable(), tp.matmul(a, b):totable(), 1e-12)
  local c = tp.randn({7, 3}, {seed = 3, dtype = "f64"})
  near(tp.einsum("ij,bjk,kl->bil", a, b, c):totable(), a:matmul(b):matmul(c):totable(), 1e-12)
end)

test("einsum.mixed_dtypes", function()
  local a, ra = gen.pair({3, 4}, "i32", 21)
  local b, rb = gen.pair({4, 2}, "f32", 22)
  local y = tp.einsum("ij,jk->ik", a, b)
  eq(y.dtype, tp.matmul(a, b).dtype)
  same(y, naive("ij,jk->ik", ra, rb))
  eq(tp.einsum("ij->", tp.ones({2, 3}, {dtype = "i32"})).dtype, "i32")  -- numpy keeps i32
end)

test("einsum.issue_chain_order", function()
  -- 2048x64 . 64x2048 . 2048x64: the cheap order never makes the 2048x2048 (no data needed).
  local a, b = tp.ones{2048, 64}, tp.ones{64, 2048}
  local order, naive_flops, flops = tp.einsum_path("ij,jk,kl->il", a, b, a)
  eq(#order, 2)
  eq({order[1][1], order[1][2]}, {2, 3})
  eq(order[1].spec, "jk,kl->jl")
  eq(order[2].spec, "ij,jl->il")
  eq(flops, 2 * (2 * 64 * 2048 * 64))
  eq(naive_flops, 3 * 2048 * 64 * 2048 * 64)
  -- The same chain, small enough to check the values.
  local x = tp.randn({64, 8}, {seed = 5, dtype = "f64"})
  local y = tp.randn({8, 64}, {seed = 6, dtype = "f64"})
  near(tp.einsum("ij,jk,kl->il", x, y, x):totable(), x:matmul(y:matmul(x)):totable(), 1e-10)
end)

test("einsum_path.single_and_many", function()
  local order, n, f = tp.einsum_path("ij->ji", tp.ones{3, 4})
  eq(#order, 0)
  eq(n, 12)
  eq(f, 0)
  local ops = {}
  for i = 1, 8 do ops[i] = tp.ones{3, 3} end
  order = tp.einsum_path("ab,bc,cd,de,ef,fg,gh,hi->ai", table.unpack(ops))
  eq(#order, 7)
end)

test("tensordot", function()
  local a, ra = gen.pair({2, 3, 4}, "f64", 31)
  local b, rb = gen.pair({3, 4, 5}, "f64", 32)
  same(tp.tensordot(a, b), naive("ijk,jkl->il", ra, rb))            -- default 2
  same(tp.tensordot(a, b, 2), naive("ijk,jkl->il", ra, rb))
  local c, rc = gen.pair({4, 5}, "f64", 33)
  same(tp.tensordot(a, c, 1), naive("ijk,kl->ijl", ra, rc))
  same(tp.tensordot(a, c, {{3}, {1}}), naive("ijk,kl->ijl", ra, rc))
  same(tp.tensordot(a, b, {{2, 3}, {1, 2}}), naive("ijk,jkl->il", ra, rb))
  same(tp.tensordot(a, b, {{-1, -2}, {2, 1}}), naive("ijk,jkl->il", ra, rb))
  same(tp.tensordot(a, c, 0), naive("ijk,lm->ijklm", ra, rc))       -- outer
  local m, n = tp.randn({4, 6}, {seed = 8}), tp.randn({6, 3}, {seed = 9})
  near(tp.tensordot(m, n, 1):totable(), m:matmul(n):totable(), 1e-5)
end)

test("outer", function()
  for _, dt in ipairs(ref.dtypes) do
    local a, ra = gen.pair({3}, dt, 41)
    local b, rb = gen.pair({4}, "i32", 42)
    same(tp.outer(a, b), naive("i,j->ij", ra, rb), TOL[ref.promote(dt, "i32")], dt)
    same(a:outer(b), naive("i,j->ij", ra, rb), TOL[ref.promote(dt, "i32")], dt)
  end
  local m = tp.tensor{{1, 2}, {3, 4}}
  eq(tp.outer(m, tp.tensor{1, 10}):totable(), {{1, 10}, {2, 20}, {3, 30}, {4, 40}})  -- flattened
end)

test("einsum.scalar_operands", function()
  eq(tp.einsum("i,i->", tp.tensor{1, 2, 3}, tp.tensor{4, 5, 6}):item(), 32)
  eq(tp.einsum("ij->", tp.tensor{{1, 2}, {3, 4}}):item(), 10)
  eq(tp.einsum(",i->i", tp.tensor(2), tp.tensor{1, 2}):totable(), {2, 4})
end)

check.summary()
