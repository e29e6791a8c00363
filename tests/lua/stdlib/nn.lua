-- tapestry.nn against naive Lua references and known values.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local nn = require "tapestry.nn"
local test, eq, near = check.test, check.eq, check.near

-- Naive references on nested Lua tables.
local function mm(a, b)
  local c = {}
  for i = 1, #a do
    c[i] = {}
    for j = 1, #b[1] do
      local s = 0
      for k = 1, #b do s = s + a[i][k] * b[k][j] end
      c[i][j] = s
    end
  end
  return c
end
local function softmax_row(r)
  local m, s, out = -math.huge, 0, {}
  for _, v in ipairs(r) do m = math.max(m, v) end
  for i, v in ipairs(r) do out[i] = math.exp(v - m); s = s + out[i] end
  for i in ipairs(out) do out[i] = out[i] / s end
  return out
end
local function f64(t) return tp.tensor(t, {dtype = "f64"}) end

local X = {{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}}
local W = {{1, 2, 0, -1}, {0.5, -0.5, 1, 0}, {-1, 0, 2, 1}}
local B = {0.1, 0.2, 0.3, 0.4}

test("nn.require_is_embedded", function()
  eq(require "tapestry.nn", nn, "require returns the same table")
  eq(debug.getinfo(nn.linear, "S").source, "@stdlib/nn.lua")
  check.truthy(require "tapestry.fem" and require "tapestry.linalg")
end)

test("nn.linear", function()
  local want = mm(X, W)
  near(nn.linear(f64(X), f64(W)):totable(), want, 1e-12)
  for i = 1, 2 do for j = 1, 4 do want[i][j] = want[i][j] + B[j] end end
  near(nn.linear(f64(X), f64(W), f64(B)):totable(), want, 1e-12)
  eq(nn.linear(f64(X[1]), f64(W)).shape, {4}, "a vector in")
  eq(nn.linear(tp.ones{5, 2, 3}, f64(W), 1).shape, {5, 2, 4}, "batched, scalar bias")
end)

test("nn.mlp", function()
  local w2 = {{1}, {-1}, {0.5}, {2}}
  local h = mm(X, W)
  for i = 1, 2 do for j = 1, 4 do h[i][j] = math.max(h[i][j] + B[j], 0) end end
  local want = mm(h, w2)
  for i = 1, 2 do want[i][1] = want[i][1] - 0.5 end
  local x = f64(X)
  near(nn.mlp(x, {{w = f64(W), b = f64(B)}, {w = f64(w2), b = -0.5}}):totable(), want, 1e-12)
  near(nn.mlp(x, {{f64(W), f64(B)}, {f64(w2), -0.5}}):totable(), want, 1e-12, "{W, B} pairs")
  local t = nn.mlp(x, {{f64(W), f64(B)}, {f64(w2)}}, "tanh"):totable()
  local th = mm(X, W)
  for i = 1, 2 do for j = 1, 4 do th[i][j] = math.tanh(th[i][j] + B[j]) end end
  near(t, mm(th, w2), 1e-12, "act by name, no bias on the last layer")
  near(nn.mlp(x, {{f64(W)}}):totable(), mm(X, W), 1e-12, "one layer: no activation at all")
end)

test("nn.softmax", function()
  local x = f64{{1, 2, 3}, {-1, 0, 1}, {5, 5, 5}}
  local s = nn.softmax(x, 2)
  near(s:sum(2):totable(), {1, 1, 1}, 1e-12, "rows sum to 1")
  near(s:totable()[1], softmax_row{1, 2, 3}, 1e-12)
  near(nn.softmax(x):totable(), s:totable(), 0, "d defaults to -1")
  near(nn.softmax(x, 1):sum(1):totable(), {1, 1, 1}, 1e-12, "columns")
  local big = nn.softmax(tp.tensor{1000, 1001}, 1):totable()
  near(big, nn.softmax(tp.tensor{0, 1}, 1):totable(), 1e-6, "stable at 1000")
  check.truthy(big[1] == big[1] and big[2] == big[2], "finite")
  near(nn.softmax(tp.tensor{-1000, 0}, 1):totable(), {0, 1}, 1e-6, "no underflow to 0/0")
end)

test("nn.log_softmax", function()
  local x = f64{{1, 2, 3}, {-1, 0, 1}}
  local want = softmax_row{1, 2, 3}
  for i, v in ipairs(want) do want[i] = math.log(v) end
  near(nn.log_softmax(x, 2):totable()[1], want, 1e-12)
  near(nn.log_softmax(f64{0, -1000}, 1):totable(), {0, -1000}, 1e-9, "finite where softmax underflows")
  near(nn.log_softmax(tp.tensor{1000, 1001}):totable(), nn.log_softmax(tp.tensor{0, 1}):totable(), 1e-6)
end)

test("nn.layernorm", function()
  local x = tp.randn({4, 16}, {seed = 5, dtype = "f64"}) * 3 + 7
  local y = nn.layernorm(x)
  near(y:mean(2):totable(), {0, 0, 0, 0}, 1e-12, "mean 0")
  near(y:var(2):totable(), {1, 1, 1, 1}, 1e-5, "var 1 (up to eps)")
  local w, b = tp.linspace(1, 2, 16, {dtype = "f64"}), tp.linspace(-1, 1, 16, {dtype = "f64"})
  near(nn.layernorm(x, {weight = w, bias = b}):totable(), (y * w + b):totable(), 1e-12, "affine")
  near(nn.layernorm(x, {eps = 0}):var(2):totable(), {1, 1, 1, 1}, 1e-12, "eps = 0")
end)

test("nn.cross_entropy", function()
  local logits = {{2, 1, 0.1}, {0.5, 2.5, 0.3}}
  local labels = {1, 2}
  local want = 0
  for i = 1, 2 do want = want - math.log(softmax_row(logits[i])[labels[i]]) end
  want = want / 2
  local lg = f64(logits)
  near(nn.cross_entropy(lg, tp.tensor(labels, {dtype = "i64"})):item(), want, 1e-12, "i64 indices")
  near(nn.cross_entropy(lg, tp.tensor(labels, {dtype = "i32"})):item(), want, 1e-12, "i32 indices")
  near(nn.cross_entropy(lg, labels):item(), want, 1e-12, "a Lua sequence")
  near(nn.cross_entropy(lg, f64{{1, 0, 0}, {0, 1, 0}}):item(), want, 1e-12, "one-hot")
  near(nn.cross_entropy(lg, tp.tensor{{true, false, false}, {false, true, false}}):item(), want,
       1e-12, "bool one-hot")
  local p = {{0.7, 0.2, 0.1}, {0.1, 0.1, 0.8}}
  local wp = 0
  for i = 1, 2 do
    local s = softmax_row(logits[i])
    for c = 1, 3 do wp = wp - p[i][c] * math.log(s[c]) end
  end
  near(nn.cross_entropy(lg, f64(p)):item(), wp / 2, 1e-12, "probabilities")
  local big = nn.cross_entropy(tp.tensor{{1000, 0}}, {1}):item()
  near(big, 0, 1e-6, "stable at 1000")
  local bad = nn.cross_entropy(lg, tp.tensor({1, 4}, {dtype = "i64"}))
  check.check_error(function() return bad:item() end, "index 4 is out of range for dim 2 of size 3")
end)

-- softmax(q kᵀ/√d + mask) v, row by row in Lua.
local function attention_ref(q, k, v, allowed)
  local d = #q[1]
  local out = {}
  for i = 1, #q do
    local s = {}
    for j = 1, #k do
      local dot = 0
      for c = 1, d do dot = dot + q[i][c] * k[j][c] end
      s[j] = (allowed and not allowed(i, j)) and -math.huge or dot / math.sqrt(d)
    end
    local p = softmax_row(s)
    out[i] = {}
    for c = 1, #v[1] do
      local acc = 0
      for j = 1, #k do acc = acc + p[j] * v[j][c] end
      out[i][c] = acc
    end
  end
  return out
end

test("nn.attention", function()
  local q = {{1, 0, 1}, {0.5, -1, 2}, {0, 0, 1}}
  local k = {{1, 1, 0}, {-1, 0.5, 1}, {2, 0, -1}, {0, 1, 1}}
  local v = {{1, 2}, {3, 4}, {-1, 0}, {0.5, 0.5}}
  local out, wts = nn.attention(f64(q), f64(k), f64(v))
  near(out:totable(), attention_ref(q, k, v), 1e-12, "plain")
  near(wts:sum(-1):totable(), {1, 1, 1}, 1e-12, "weights are distributions")
  local causal = function(i, j) return j <= i end
  near(nn.attention(f64(q), f64(k), f64(v), {causal = true}):totable(), attention_ref(q, k, v, causal),
       1e-12, "causal")
  local m = {}
  for i = 1, 3 do
    m[i] = {}
    for j = 1, 4 do m[i][j] = (i + j) % 3 ~= 0 end
  end
  local allowed = function(i, j) return m[i][j] end
  near(nn.attention(f64(q), f64(k), f64(v), {mask = tp.tensor(m)}):totable(),
       attention_ref(q, k, v, allowed), 1e-12, "bool mask")
  local add = tp.where(tp.tensor(m), 0, -math.huge)
  near(nn.attention(f64(q), f64(k), f64(v), {mask = add}):totable(), attention_ref(q, k, v, allowed),
       1e-12, "additive mask")
  -- batched over heads: each head alone
  local qb, kb, vb = tp.randn({2, 3, 4}, {seed = 1}), tp.randn({2, 5, 4}, {seed = 2}), tp.randn({2, 5, 6}, {seed = 3})
  local ob = nn.attention(qb, kb, vb, {causal = true})
  eq(ob.shape, {2, 3, 6})
  near(ob:select(1, 2):totable(), nn.attention(qb:select(1, 2), kb:select(1, 2), vb:select(1, 2), {causal = true}):totable(), 1e-5)
end)

check.summary()
