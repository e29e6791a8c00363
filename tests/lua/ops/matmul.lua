-- Matrix products with numpy's rules: 1-D operands, batching, broadcasting, dtypes.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, eq, same = check.test, check.eq, check.same

local CASES = {
  {{3, 4}, {4, 5}}, {{4}, {4}}, {{3, 4}, {4}}, {{4}, {4, 5}},
  {{2, 3, 4}, {4, 5}}, {{3, 4}, {2, 4, 5}}, {{2, 3, 4}, {2, 4, 5}},
  {{2, 1, 3, 4}, {5, 4, 2}}, {{7, 11}, {11, 13}}, {{1, 1}, {1, 1}},
  {{1, 5}, {5, 1}}, {{5, 1}, {1, 5}}, {{2, 3, 4}, {4}}, {{4}, {3, 4, 2}},
}

local seed = 400
for _, dt in ipairs(ref.dtypes) do
  for _, c in ipairs(CASES) do
    seed = seed + 2
    local s = seed
    local what = check.show(c[1]) .. " @ " .. check.show(c[2]) .. " " .. dt
    test("matmul." .. what, function()
      local a, ra = gen.pair(c[1], dt, s, -3, 3)
      local b, rb = gen.pair(c[2], dt, s + 1, -3, 3)
      local want = ref.matmul(ra, rb)
      same(a:matmul(b), want, nil, "a:matmul(b)")
      same(tp.matmul(a, b), want, nil, "tp.matmul")
    end)
  end
end

test("matmul.mixed_dtypes", function()
  local a, ra = gen.pair({3, 4}, "i32", 450)
  local b, rb = gen.pair({4, 2}, "f32", 451)
  local y = tp.matmul(a, b)
  eq(y.dtype, "f64")
  same(y, ref.matmul(ra, rb))
  local c, rc = gen.pair({4, 2}, "i64", 452)
  same(tp.matmul(a, c), ref.matmul(ra, rc), nil, "i32 @ i64")
  local d, rd = gen.pair({4, 2}, "bool", 453)
  same(tp.matmul(a, d), ref.matmul(ra, rd), nil, "i32 @ bool")
end)

test("matmul.known_values", function()
  local a = tp.tensor{{1, 2}, {3, 4}}
  local b = tp.tensor{{5, 6}, {7, 8}}
  eq(a:matmul(b):totable(), {{19, 22}, {43, 50}})
  eq(tp.matmul(tp.tensor{1, 2, 3}, tp.tensor{4, 5, 6}):item(), 32)
  eq(tp.matmul(tp.tensor{1, 2, 3}, tp.tensor{4, 5, 6}).shape, {})
  eq(tp.matmul(tp.eye(3), tp.tensor{1, 2, 3}):totable(), {1, 2, 3})
end)

test("matmul.larger_f32", function()
  local a, ra = gen.pair({37, 64}, "f32", 460, -1, 1)
  local b, rb = gen.pair({64, 29}, "f32", 461, -1, 1)
  same(a:matmul(b), ref.matmul(ra, rb), 1e-4)
end)

test("matmul.of_views", function()
  -- transposed and sliced operands (non-contiguous inputs)
  local a, ra = gen.pair({5, 3}, "f64", 470)
  local b, rb = gen.pair({6, 5}, "f64", 471)
  same(a:t():matmul(b:t()), ref.matmul(ref.transpose(ra, 1, 2), ref.transpose(rb, 1, 2)))
  local sa = a[{{2, 4}, {}}]
  same(tp.matmul(sa, sa:t()), ref.matmul(ref.index(ra, {{2, 4}}), ref.transpose(ref.index(ra, {{2, 4}}), 1, 2)))
end)

test("matmul.chain_and_expression", function()
  local a, ra = gen.pair({4, 6}, "f64", 480)
  local b, rb = gen.pair({6, 3}, "f64", 481)
  local c, rc = gen.pair({3}, "f64", 482)
  same(tp.relu(a:matmul(b) + 1):matmul(c),
       ref.matmul(ref.unary("relu", ref.binary("add", ref.matmul(ra, rb), 1)), rc))
end)

test("matmul.medium", function()
  local a, ra = gen.pair({100, 90}, "f64", 490, -1, 1)
  local b, rb = gen.pair({90, 70}, "f64", 491, -1, 1)
  same(a:matmul(b), ref.matmul(ra, rb))
  local c, rc = gen.pair({3, 40, 33}, "i64", 492)
  local d, rd = gen.pair({33, 50}, "i64", 493)
  same(c:matmul(d), ref.matmul(rc, rd), nil, "batched i64")
end)

check.summary()
