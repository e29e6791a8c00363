-- Hermitian groups (docs/properties.md): declared, checked when evaluated, known through ops,
-- stored packed (a mirrored tile is the stored one's conjugate transpose) and exploited in
-- maps, reductions and contractions; every result equals the same op on x:dense().
-- Runs on 1 rank, 3 virtual ranks (plans verified), a simulated device and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, near, err, truthy = check.test, check.eq, check.near, check.check_error, check.truthy

local function maxdiff(x, y) return (x - y):abs():max():item() end
local function all_near(cases)
  local ds = {}
  for i, c in ipairs(cases) do ds[i] = (c[1] - c[2]):abs():max() end
  tp.eval(table.unpack(ds))
  for i, c in ipairs(cases) do near(ds[i]:item(), 0, c[3], c[4]) end
end
local function held(name)
  for _, t in ipairs(tp.tensors()) do if t.name == name then return t end end
end
local function group(x, i) return tostring(x:properties().symmetry[i or 1]) end
local function herm(n, seed, dtype)
  return tp.randn({n, n}, {dtype = dtype or "c128", symmetry = tp.hermitian{1, 2}, seed = seed})
end

test("tp.hermitian groups", function()
  eq(tostring(tp.hermitian{2, 1}), "hermitian{2,1}")
  eq(tp.hermitian{1, 2}.kind, "hermitian")
  err(function() return tp.hermitian{1, 2, 3} end, "tp.hermitian", "a pair of dims")
  err(function() return tp.randn({3, 3}):declare{symmetry = tp.hermitian{1, 2}} end, "tp.declare",
      "needs a complex tensor", "f32 {3,3}", "use tp.symmetric")
  err(function() return tp.zeros({3, 4}, {dtype = "c64", symmetry = tp.hermitian{1, 2}}) end, "equal sizes")
end)

test("creators: tp.randn and tp.rand of complex dtypes, Hermitian", function()
  local h = herm(7, 1)
  eq(group(h), "hermitian{1,2}")
  local d = h:dense()
  near(maxdiff(d, d:t():conj()), 0, 0, "x = conj(x^T)")
  eq(d:imag():diag():abs():max():item(), 0, "the diagonal is real")
  -- the upper triangle is that of the same call without the option
  local z = tp.randn({7, 7}, {dtype = "c128", seed = 1})
  near(maxdiff(d:triu(1), z:triu(1)), 0, 0)
  near(maxdiff(d:diag(), z:diag():real():cast("c128")), 0, 0)
  -- complex random tensors: the parts are the two elements of a real random {..., 2}
  local r = tp.randn({3, 4, 2}, {dtype = "f64", seed = 5})
  near(maxdiff(tp.randn({3, 4}, {dtype = "c128", seed = 5}):real(), r[{{}, {}, 1}] * math.sqrt(0.5)), 0, 1e-15)
  local u = tp.rand({500}, {dtype = "c64", seed = 6})
  eq(u.dtype, "c64")
  truthy(u:real():min():item() >= 0 and u:imag():max():item() < 1)
  near(tp.randn({4000}, {dtype = "c128", seed = 7}):abs():square():mean():item(), 1, 0.1, "E|z|^2 = 1")
  local c = tp.rand({6, 6}, {dtype = "c64", symmetry = tp.hermitian{1, 2}, seed = 8})
  near(maxdiff(c:dense(), c:dense():t():conj()), 0, 0)
  eq(tp.ones({3, 3}, {dtype = "c64", symmetry = tp.hermitian{1, 2}}):properties().symmetry[1].kind, "hermitian")
end)

test("declare: checked when evaluated", function()
  local x = tp.randn({5, 5}, {dtype = "c128", seed = 9})
  local h = (x + x:t():conj()):declare{symmetry = tp.hermitian{1, 2}}
  near(maxdiff(h, x + x:t():conj()), 0, 0)
  local bad = x:declare{symmetry = tp.hermitian{1, 2}}
  err(function() return bad:sum():item() end, "tp.declare: x is not Hermitian in dims 1,2 (max |x - conj(x^T)| = ")
  -- a complex symmetric tensor is not Hermitian (its diagonal is not real either)
  local s = (x + x:t()):declare{symmetry = tp.hermitian{1, 2}}
  err(function() return s:real():sum():item() end, "not Hermitian")
  local ok = (x + x:t()):declare{symmetry = tp.symmetric{1, 2}}
  near(maxdiff(ok, x + x:t()), 0, 0, "complex symmetric declarations are checked too")
  err(function() return x:declare{symmetry = tp.symmetric{1, 2}}:sum():item() end, "not symmetric in dims 1,2")
end)

test("known through ops", function()
  local x = tp.randn({6, 6}, {dtype = "c64", seed = 10})
  local a = tp.randn({6, 3}, {dtype = "c64", seed = 11})
  eq(group(x + x:t():conj()), "hermitian{1,2}")
  eq(group(x:conj():t() + x), "hermitian{1,2}")
  eq(group(x * x:t():conj()), "hermitian{1,2}")
  eq(group(a:matmul(a:conj():t())), "hermitian{1,2}")
  eq(group(a:conj():t():matmul(a)), "hermitian{1,2}")
  eq(group(a:matmul(a:t())), "symmetric{1,2}", "A A^T is symmetric, complex or not")
  local h = herm(6, 12, "c64")
  eq(group(h * 2), "hermitian{1,2}")
  eq(group(2 - h), "hermitian{1,2}")
  eq(group(h / 3), "hermitian{1,2}")
  eq(group(h:conj()), "hermitian{1,2}")
  eq(group(h:exp()), "hermitian{1,2}")
  eq(group(h + h:square()), "hermitian{1,2}")
  eq(group(h:real()), "symmetric{1,2}")
  eq(group(h:abs()), "symmetric{1,2}")
  eq(group(h:imag()), "antisymmetric{1,2}")
  eq(group(h:cast("c128")), "hermitian{1,2}")
  eq(group(h:cast("f32")), "symmetric{1,2}")
  eq(#(h * tp.complex(0, 1)):properties().symmetry, 0, "i h is anti-Hermitian: nothing claimed")
  eq(#(h * x):properties().symmetry, 0)
  -- log and sqrt of a negative diagonal element are not real (log(-1) = i pi): nothing claimed
  eq(#h:log():properties().symmetry, 0)
  eq(#h:sqrt():properties().symmetry, 0)
  local dl = h:dense():log()
  truthy(maxdiff(dl, dl:t():conj()) > 1, "so the claim would be wrong")
end)

test("gradients keep the Hermitian group (torch's convention, projected as declared)", function()
  local h = herm(5, 20)
  tp.env.hg = h
  -- L = sum(Re(h * c)): dense, dL/dh = conj(c); on Hermitian matrices its projection
  -- (G + G^H) / 2 = (conj(c) + c^T) / 2, which is what a declared parameter gets.
  local c = tp.complex(tp.randn({5, 5}, {dtype = "f64", seed = 3}), tp.randn({5, 5}, {dtype = "f64", seed = 4}))
  local gh = tp.grad((tp.env.hg * c):real():sum(), {tp.env.hg})[1]
  eq(group(gh), "hermitian{1,2}")
  near(maxdiff(gh, (c:conj() + c:t()) / 2), 0, 1e-12)
  truthy(maxdiff(gh, c:conj()) > 0.1, "the projection is not the identity here")
  -- a real function of a Hermitian tensor's real part: its gradient is symmetric, as declared
  local s = tp.randn({5, 5}, {dtype = "f64", symmetry = tp.symmetric{1, 2}, seed = 21})
  tp.env.s = s
  local g = tp.grad((tp.env.s * h:real()):sum(), {tp.env.s})[1]
  eq(group(g), "symmetric{1,2}")
  near(maxdiff(g, h:dense():real()), 0, 1e-12)
  tp.env.hg, tp.env.s = nil, nil
end)

test("stored packed: the conjugate transpose of the stored tile", function()
  local h = herm(40, 13)
  tp.env.h = h
  local rh, d = tp.env.h, h:dense()
  truthy(held("h").packed)
  eq(held("h").bytes, rh:nbytes())
  truthy(held("h").bytes < 0.6 * 40 * 40 * 16, "about half the dense bytes")
  near(maxdiff(rh, d), 0, 0)
  near(maxdiff(rh[{{3, 30}, {20, 40}}], d[{{3, 30}, {20, 40}}]), 0, 0, "slices")
  all_near{{rh:exp(), d:exp(), 1e-12, "exp"}, {rh * 2 - 1, d * 2 - 1, 1e-12}, {rh:conj(), d:conj(), 0},
           {rh:real(), d:real(), 0}, {rh:imag(), d:imag(), 0}, {rh + rh:square(), d + d:square(), 1e-12}}
  eq(rh:exp():nbytes(), rh:nbytes(), "exp runs on the stored tiles")
  eq((rh * 2 - 1):nbytes(), rh:nbytes())
  -- full and partial sums from the stored tiles
  all_near{{rh:sum(), d:sum(), 1e-10, "sum"}, {rh:mean(), d:mean(), 1e-12, "mean"}, {rh:sum(1), d:sum(1), 1e-10},
           {rh:sum(2), d:sum(2), 1e-10}, {rh:sum(2, {keepdim = true}), d:sum(2, {keepdim = true}), 1e-10}}
  eq(rh:sum():imag():item(), 0, "the sum of a Hermitian matrix is real")
  tp.env.h = nil
end)

test("a zero imaginary part mirrors as +0, as x + conj(x^T) makes it", function()
  -- equal imaginary parts across the diagonal: h's are b - b = +0 on both sides, and its real
  -- parts are negative, where log, sqrt and pow see the sign of a zero imaginary part
  local re = -tp.randn({20, 20}, {dtype = "f64", seed = 21}):abs() - 1
  local b = tp.randn({20, 20}, {dtype = "f64", seed = 22})
  local x = tp.complex(re, b + b:t())
  local h = (x + x:t():conj()):declare{symmetry = tp.hermitian{1, 2}}
  local d = (x + x:t():conj())
  tp.env.hz = h
  local rh = tp.env.hz
  truthy(held("hz").packed)
  eq((1 / rh:imag()):min():item(), math.huge, "every imaginary part is +0")
  all_near{{rh:log(), d:log(), 1e-12, "log"}, {rh:sqrt(), d:sqrt(), 1e-12, "sqrt"},
           {rh:pow(0.5), d:pow(0.5), 1e-12, "pow"}, {h:log(), d:log(), 1e-12, "log, not kept"}}
  tp.env.hz = nil
end)

test("contractions", function()
  local a, b = herm(36, 14), herm(36, 15)
  tp.env.a, tp.env.b = a, b
  local ra, rb, ad, bd = tp.env.a, tp.env.b, a:dense(), b:dense()
  local cases = {}
  for _, spec in ipairs{"ij,ji->", "ij,ij->", "ij,jk->ik", "ij,j->i"} do
    local y = spec == "ij,j->i" and tp.randn({36}, {dtype = "c128", seed = 16}) or rb
    local yd = spec == "ij,j->i" and y or bd
    cases[#cases + 1] = {tp.einsum(spec, ra, y), tp.einsum(spec, ad, yd), 1e-10, spec}
  end
  cases[#cases + 1] = {ra:matmul(rb), ad:matmul(bd), 1e-10, "matmul"}
  all_near(cases)
  -- with more dims: abij,ijcd->abcd, Hermitian in (i,j) of both
  local x = tp.randn({4, 4, 24, 24}, {dtype = "c128", seed = 17})
  local y = tp.randn({24, 24, 4, 4}, {dtype = "c128", seed = 18})
  local hx = (x + x:permute{1, 2, 4, 3}:conj()):declare{symmetry = tp.hermitian{3, 4}}
  local hy = (y + y:permute{2, 1, 3, 4}:conj()):declare{symmetry = tp.hermitian{1, 2}}
  all_near{{tp.einsum("abij,ijcd->abcd", hx, hy), tp.einsum("abij,ijcd->abcd", hx:dense(), hy:dense()), 1e-10},
           {tp.einsum("abij,jicd->abcd", hx, hy), tp.einsum("abij,jicd->abcd", hx:dense(), hy:dense()), 1e-10}}
  -- kept packed, summed over the stored tile pairs only: about half the dense flops
  tp.env.hx, tp.env.hy, tp.env.dx, tp.env.dy = hx, hy, hx:dense(), hy:dense()
  tp.eval(tp.env.hx, tp.env.hy, tp.env.dx, tp.env.dy)  -- held: the plans cost the contraction only
  truthy(held("hx").packed and not held("dx").packed)
  for _, mesh in ipairs{1, 3} do
    local fs = tp.plan(tp.einsum("abij,ijcd->abcd", tp.env.hx, tp.env.hy), {mesh = mesh}):cost().flops
    local fd = tp.plan(tp.einsum("abij,ijcd->abcd", tp.env.dx, tp.env.dy), {mesh = mesh}):cost().flops
    truthy(fs <= 0.6 * fd, "mesh " .. mesh .. ": planned flops " .. fs .. " vs dense " .. fd)
  end
  tp.env.dx, tp.env.dy = nil, nil
  near(maxdiff(tp.einsum("abij,ijcd->abcd", tp.env.hx, tp.env.hy), tp.einsum("abij,ijcd->abcd", hx:dense(), hy:dense())),
       0, 1e-10)
  tp.env.hx, tp.env.hy = nil, nil
  tp.env.a, tp.env.b = nil, nil
end)

test("save_env keeps a Hermitian declaration", function()
  local dir = os.tmpname()
  os.remove(dir)
  local h = herm(20, 19, "c64")
  tp.env.hh = h
  local bytes = held("hh").bytes
  tp.save_env(dir)
  tp.env.hh = nil
  tp.load_env(dir)
  eq(held("hh").packed, true)
  eq(held("hh").bytes, bytes)
  eq(group(tp.env.hh), "hermitian{1,2}")
  near(maxdiff(tp.env.hh, h:dense()), 0, 0)
  tp.env.hh = nil
  os.execute("rm -rf '" .. dir .. "'")
end)

check.summary()
