-- Windows and padding: pad roll stencil conv2d maxpool2d avgpool2d against naive Lua loops.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local ref = require "ref"
local gen = require "gen"
local test, same, eq = check.test, check.same, check.eq

-- --- a naive reference over flat row-major data, indices 0-based -------------------------

local function at(r, idx)
  local off = 0
  for d = 1, #r.shape do off = off * r.shape[d] + idx[d] end
  return r.data[off + 1]
end

-- A reference tensor of `shape` whose element at idx (0-based) is f(idx).
local function build(dtype, shape, f)
  local data, idx, n = {}, {}, 1
  for d = 1, #shape do idx[d] = 0; n = n * shape[d] end
  for i = 1, n do
    data[i] = f(idx)
    for d = #shape, 1, -1 do
      idx[d] = idx[d] + 1
      if idx[d] < shape[d] then break end
      idx[d] = 0
    end
  end
  return ref.new(dtype, shape, data)
end

-- Where coordinate s of a dim of size n reads from, or nil for the constant/zero padding.
local function source(s, n, mode)
  if s >= 0 and s < n then return s end
  if mode == "reflect" then return s < 0 and -s or 2 * (n - 1) - s end
  if mode == "periodic" then return s % n end
  return nil
end

local function pad_ref(r, pads, mode, value)
  local shape = {}
  for d = 1, #r.shape do shape[d] = r.shape[d] + pads[d][1] + pads[d][2] end
  return build(r.dtype, shape, function(idx)
    local src = {}
    for d = 1, #shape do
      src[d] = source(idx[d] - pads[d][1], r.shape[d], mode)
      if not src[d] then return value end
    end
    return at(r, src)
  end)
end

local function roll_ref(r, shift, dim)
  return build(r.dtype, r.shape, function(idx)
    local src = {table.unpack(idx)}
    src[dim] = (idx[dim] - shift) % r.shape[dim]
    return at(r, src)
  end)
end

local function stencil_ref(r, k, boundary)
  local mode = boundary ~= "zero" and boundary or nil
  return build(r.dtype, r.shape, function(idx)
    local acc = 0
    build(k.dtype, k.shape, function(t)
      local src = {}
      for d = 1, #idx do
        src[d] = source(idx[d] + t[d] - k.shape[d] // 2, r.shape[d], mode)
        if not src[d] then return 0 end
      end
      acc = acc + at(r, src) * at(k, t)
      return 0
    end)
    return acc
  end)
end

local function conv_ref(x, w, s, p, dl, groups)
  local C, H, W = x.shape[2], x.shape[3], x.shape[4]
  local O, Cg, KH, KW = w.shape[1], w.shape[2], w.shape[3], w.shape[4]
  local OH = (H + 2 * p[1] - dl[1] * (KH - 1) - 1) // s[1] + 1
  local OW = (W + 2 * p[2] - dl[2] * (KW - 1) - 1) // s[2] + 1
  return build(x.dtype, {x.shape[1], O, OH, OW}, function(i)
    local acc, g = 0, i[2] // (O // groups)
    for c = 0, Cg - 1 do
      for a = 0, KH - 1 do
        for b = 0, KW - 1 do
          local y, z = s[1] * i[3] - p[1] + dl[1] * a, s[2] * i[4] - p[2] + dl[2] * b
          if y >= 0 and y < H and z >= 0 and z < W then
            acc = acc + at(x, {i[1], g * Cg + c, y, z}) * at(w, {i[2], c, a, b})
          end
        end
      end
    end
    return acc
  end)
end

local function pool_ref(x, kind, k, s, p, dtype)
  local H, W = x.shape[3], x.shape[4]
  local OH, OW = (H + 2 * p[1] - k[1]) // s[1] + 1, (W + 2 * p[2] - k[2]) // s[2] + 1
  return build(dtype or x.dtype, {x.shape[1], x.shape[2], OH, OW}, function(i)
    local best, sum = nil, 0
    for a = 0, k[1] - 1 do
      for b = 0, k[2] - 1 do
        local y, z = s[1] * i[3] - p[1] + a, s[2] * i[4] - p[2] + b
        if y >= 0 and y < H and z >= 0 and z < W then
          local v = at(x, {i[1], i[2], y, z})
          sum = sum + v
          if best == nil or v > best then best = v end
        end
      end
    end
    return kind == "max" and best or sum / (k[1] * k[2])
  end)
end

-- --- the tests --------------------------------------------------------------------------------

for _, dt in ipairs{"f32", "i32", "bool"} do
  test("pad.constant." .. dt, function()
    local x, r = gen.pair({4, 5}, dt, 11)
    local pads = {{1, 2}, {0, 3}}
    local zero, fill = 0, 7
    if dt == "bool" then zero, fill = false, true end
    same(x:pad(pads), pad_ref(r, pads, "constant", zero), nil, "default value")
    same(x:pad({1, 2, 0, 3}, {value = dt == "bool" and 1 or 7}), pad_ref(r, pads, "constant", fill),
         nil, "flat pads")
  end)
end

test("pad.reflect_periodic", function()
  local x, r = gen.pair({5, 4, 3}, "f64", 12)
  local pads = {{2, 4}, {3, 1}, {0, 2}}
  same(x:pad(pads, {mode = "reflect"}), pad_ref(r, pads, "reflect"), nil, "reflect")
  pads = {{5, 1}, {4, 4}, {3, 0}}
  same(x:pad(pads, {mode = "periodic"}), pad_ref(r, pads, "periodic"), nil, "periodic")
end)

test("roll", function()
  for _, dt in ipairs(ref.dtypes) do
    local x, r = gen.pair({4, 5}, dt, 13)
    same(x:roll(2, 1), roll_ref(r, 2, 1), nil, dt .. " dim 1")
    same(x:roll(-7, -1), roll_ref(r, -7, 2), nil, dt .. " dim -1")
    same(x:roll(0, 2), r, nil, dt .. " no shift")
    local flat = roll_ref(ref.new(r.dtype, {20}, r.data), 3, 1)
    same(x:roll(3), ref.new(r.dtype, {4, 5}, flat.data), nil, dt .. " flattened")
  end
end)

test("stencil.boundaries", function()
  for _, dt in ipairs{"f32", "f64", "i32"} do
    local x, r = gen.pair({9, 8}, dt, 14)
    local k, rk = gen.pair({3, 5}, dt, 15)
    for _, b in ipairs{"zero", "periodic", "reflect"} do
      same(tp.stencil(x, k, {boundary = b}), stencil_ref(r, rk, b), nil, dt .. " " .. b)
    end
  end
  local lap = {{0, 1, 0}, {1, -4, 1}, {0, 1, 0}}
  local u, ru = gen.pair({6, 7}, "f32", 16)
  same(tp.stencil(u, lap), stencil_ref(ru, ref.tensor(lap, "f32"), "zero"), nil, "table kernel")
  local v, rv = gen.pair({11}, "f64", 17)
  local k1, rk1 = gen.pair({5}, "f64", 18)
  same(tp.stencil(v, k1, {boundary = "periodic"}), stencil_ref(rv, rk1, "periodic"), nil, "1-D")
  local w, rw = gen.pair({4, 5, 6}, "f32", 19)
  local k3, rk3 = gen.pair({3, 1, 3}, "f32", 20)
  same(tp.stencil(w, k3, {boundary = "reflect"}), stencil_ref(rw, rk3, "reflect"), nil, "3-D")
end)

test("conv2d", function()
  for _, dt in ipairs{"f32", "i64"} do
    local x, rx = gen.pair({2, 4, 9, 8}, dt, 21)
    local w, rw = gen.pair({6, 4, 3, 3}, dt, 22)
    local tol = dt == "f32" and 1e-4 or nil  -- BLAS sums in f32
    same(tp.conv2d(x, w), conv_ref(rx, rw, {1, 1}, {0, 0}, {1, 1}, 1), tol, dt .. " plain")
    same(tp.conv2d(x, w, {stride = 2, padding = {1, 2}}),
         conv_ref(rx, rw, {2, 2}, {1, 2}, {1, 1}, 1), tol, dt .. " stride padding")
    local wg, rwg = gen.pair({6, 2, 3, 2}, dt, 23)
    same(tp.conv2d(x, wg, {groups = 2, dilation = {2, 3}, stride = {1, 2}, padding = 1}),
         conv_ref(rx, rwg, {1, 2}, {1, 1}, {2, 3}, 2), tol, dt .. " groups dilation")
  end
end)

test("pool2d", function()
  for _, dt in ipairs{"f32", "i32"} do
    local x, r = gen.pair({2, 3, 9, 8}, dt, 24)
    same(tp.maxpool2d(x, 2), pool_ref(r, "max", {2, 2}, {2, 2}, {0, 0}), nil, dt .. " max 2")
    same(tp.maxpool2d(x, {3, 2}, {stride = 1, padding = {1, 1}}),
         pool_ref(r, "max", {3, 2}, {1, 1}, {1, 1}), nil, dt .. " max padded")
    local avg = dt == "f32" and "f32" or "f64"
    same(tp.avgpool2d(x, 3, {stride = {2, 3}, padding = 1}),
         pool_ref(r, "avg", {3, 3}, {2, 3}, {1, 1}, avg), nil, dt .. " avg padded")
  end
end)

test("window.composes", function()
  -- heat step: u + 0.1 * laplacian(u), twice, periodic: the sum is conserved.
  local u = tp.rand({16, 12}, {seed = 3, dtype = "f64"})
  local lap = tp.tensor({{0, 1, 0}, {1, -4, 1}, {0, 1, 0}}, {dtype = "f64"})
  local v = u
  for _ = 1, 2 do v = v + tp.stencil(v, lap, {boundary = "periodic"}) * 0.1 end
  check.near(v:sum():item(), u:sum():item(), 1e-12)
  eq(tp.maxpool2d(tp.conv2d(u:reshape{1, 1, 16, 12}, lap:reshape{1, 1, 3, 3}, {padding = 1}), 2).shape,
     {1, 1, 8, 6})
end)

test("stencil.evaluated_steps_match_shifted_sums", function()
  -- A stencil read only by its step's map runs band by band inside it on each rank
  -- (RankProgram::run_banded): tall enough for several bands per rank and seams between ranks.
  local rows, cols = 120, 8192
  local lap = {{0, 1, 0}, {1, -4, 1}, {0, 1, 0}}
  local function shifted_lap(x)
    local p = x:pad({{1, 1}, {1, 1}})
    return p:narrow(1, 1, rows):narrow(2, 2, cols) + p:narrow(1, 3, rows):narrow(2, 2, cols)
         + p:narrow(1, 2, rows):narrow(2, 1, cols) + p:narrow(1, 2, rows):narrow(2, 3, cols)
         - 4 * x
  end
  local u = tp.eval(tp.rand({rows, cols}, {seed = 31}))
  local v = u
  for _ = 1, 3 do
    u = tp.eval(u + 0.1 * tp.stencil(u, lap))
    v = tp.eval(v + 0.1 * shifted_lap(v))
  end
  check.truthy((u - v):abs():max():item() < 1e-5, "stencil steps differ from shifted sums")
end)

check.summary()
