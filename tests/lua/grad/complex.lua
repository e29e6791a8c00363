-- tp.grad through complex values and the FFT against central finite differences (c128, f64).
-- The convention is torch's: the gradient of a real loss L with respect to a complex z = a + ib
-- is dL/da + i dL/db (so z - lr * grad descends); gradcheck perturbs a and b one at a time.
-- Runs on 1 rank, 3 virtual ranks and under mpirun -n 2 (tests/mpi).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local gc = require "gradcheck"
local test, near, eq, err = check.test, check.near, check.eq, check.check_error

local C = {complex = true}

-- torch's numbers, worked by hand: d|z|^2 = 2z; d re(z^2) = 2 conj(z); d im(z^2) = 2i conj(z)...
test("convention", function()
  local z = gc.tensor({1, 3, 1, -2}, {2}, true)  -- 1+1i, 3-2i
  local g = tp.grad((z:abs() ^ 2):sum(), {z})[1]
  eq(g.dtype, "c128")
  near(g:real():totable(), {2, 6}, 1e-12)
  near(g:imag():totable(), {2, -4}, 1e-12)
  g = tp.grad((z * z):real():sum(), {z})[1]  -- re(z^2) = a^2 - b^2: (2a, -2b)
  near(g:real():totable(), {2, 6}, 1e-12)
  near(g:imag():totable(), {-2, 4}, 1e-12)
  g = tp.grad((z * z):imag():sum(), {z})[1]  -- im(z^2) = 2ab: (2b, 2a)
  near(g:real():totable(), {2, -4}, 1e-12)
  near(g:imag():totable(), {2, 6}, 1e-12)
  -- a real param through complex values: |x + 1i| = sqrt(x^2 + 1)
  local x = tp.detach(tp.tensor({1, 2, 3}, {dtype = "f64"}))
  local gx = tp.grad(tp.complex(x, 1):abs():sum(), {x})[1]
  eq(gx.dtype, "f64")
  near(gx:totable(), {1 / math.sqrt(2), 2 / math.sqrt(5), 3 / math.sqrt(10)}, 1e-12)
end)

test("arithmetic", function()
  gc.check("a+b*a-b", function(a, b) return a + b * a - b end, {{2, 3}, {3}}, C)
  gc.check("a/b", function(a, b) return a / b end, {{4}, {4}}, {complex = true, lo = 0.3})
  gc.check("-a*2.5", function(a) return -a * 2.5 end, {{3}}, C)
  gc.check("real*complex", function(x, z) return x * z + x end, {{3}, {3}}, {complex = {false, true}})
  gc.check("real/complex", function(x, z) return x / z end, {{3}, {3}}, {complex = {false, true}, lo = 0.3})
  gc.check("a^b", function(a, b) return a ^ b end, {{3}, {3}}, {complex = true, lo = 0.3})
  gc.check("a^3", function(a) return a ^ 3 end, {{3}}, C)
  gc.check("where", function(a, b) return tp.where(a:real():gt(0), a, b) end, {{2, 3}, {3}}, C)
end)

test("parts", function()
  gc.check("conj", function(z) return z:conj() * z:exp() end, {{3}}, C)
  gc.check("real", function(z) return z:real() end, {{2, 2}}, C)
  gc.check("imag", function(z) return z:imag() end, {{2, 2}}, C)
  gc.check("abs", function(z) return z:abs() end, {{4}}, C)
  gc.check("angle", function(z) return z:angle() end, {{4}}, C)
  gc.check("complex", function(re, im) return tp.complex(re, im) * tp.complex(im, 0.5) end, {{3}, {3}})
  gc.check("complex.broadcast", function(re, im) return tp.complex(re, im) end, {{2, 1}, {3}})
  gc.check("cast", function(z) return z:cast("f64") + z:abs() end, {{3}}, C)
  gc.check("real.cast", function(x) return x:cast("c128") * x:cast("c128") end, {{3}})
  -- at 0: abs and angle give 0 (torch's sgn and angle), not nan
  local z = gc.tensor({0, 1, 0, 0}, {2}, true)
  local g = tp.grad((z:abs() + z:angle()):sum(), {z})[1]
  near(g:real():totable(), {0, 1}, 1e-12)
  near(g:imag():totable(), {0, 1}, 1e-12)  -- angle at 1: i z / |z|^2 = i
end)

test("functions", function()
  for _, name in ipairs{"exp", "sin", "cos", "square", "reciprocal"} do
    gc.check(name, function(z) return z[name](z) end, {{2, 3}}, C)
  end
  gc.check("log", function(z) return z:log() end, {{4}}, {complex = true, lo = 0.3})
  gc.check("sqrt", function(z) return z:sqrt() end, {{4}}, {complex = true, lo = 0.3})
end)

test("reductions", function()
  gc.check("sum", function(z) return z:sum(2) end, {{2, 3}}, C)
  gc.check("mean", function(z) return z:mean() end, {{2, 3}}, C)
  gc.check("prod", function(z) return z:prod(2) end, {{2, 3}}, C)
  gc.check("prod.zero", function(z) return z:prod() end, {{3}}, {complex = true, inputs = {{0, 1.5, -0.7, 0, 0.4, 1.1}}})
  gc.check("var", function(z) return z:var(1) end, {{3, 2}}, C)
  gc.check("norm", function(z) return z:norm(2, 2) end, {{2, 3}}, C)
end)

test("contractions", function()
  gc.check("matmul", tp.matmul, {{2, 3}, {3, 2}}, C)
  gc.check("matmul.batch", tp.matmul, {{2, 2, 3}, {3, 2}}, C)
  gc.check("matmul.mixed", function(x, z) return tp.matmul(x:cast("c128"), z) end, {{2, 3}, {3}},
           {complex = {false, true}})
  gc.check("einsum", function(a, b) return tp.einsum("ij,jk->ik", a, b) end, {{2, 3}, {3, 2}}, C)
end)

test("shape", function()
  gc.check("views", function(z) return z:t():reshape{6}[{{2, 5}}]:expand{2, 4} end, {{2, 3}}, C)
  gc.check("cat.pad.roll", function(a, b) return tp.cat({a, b}, 1):pad({1, 1}):roll(2) end, {{2}, {3}}, C)
  gc.check("flip.step", function(z) return z[{{3, 1, -2}}] end, {{4}}, C)
end)

-- numpy.fft's functions, every norm: each is linear, so a loss through it tests the whole rule.
test("fft", function()
  for _, norm in ipairs{"backward", "ortho", "forward"} do
    local o = {norm = norm}
    gc.check("fft." .. norm, function(z) return tp.fft.fft(z, o) end, {{2, 5}}, C)
    gc.check("ifft." .. norm, function(z) return tp.fft.ifft(z, o) end, {{4, 2}}, {complex = true})
    gc.check("fft.real." .. norm, function(x) return tp.fft.fft(x, o) end, {{6}})
    gc.check("rfft." .. norm, function(x) return tp.fft.rfft(x, o) end, {{2, 6}})
    gc.check("rfft.odd." .. norm, function(x) return tp.fft.rfft(x, o) end, {{7}})
    gc.check("irfft." .. norm, function(z) return tp.fft.irfft(z, o) end, {{2, 4}}, C)
    gc.check("irfft.odd." .. norm, function(z) return tp.fft.irfft(z, {n = 5, norm = norm}) end, {{3}}, C)
    gc.check("fft2." .. norm, function(z) return tp.fft.fft2(z, o) end, {{2, 3}}, C)
    gc.check("ifftn." .. norm, function(z) return tp.fft.ifftn(z, o) end, {{2, 2, 2}}, C)
    gc.check("ifft2." .. norm, function(z) return tp.fft.ifft2(z, o) end, {{3, 2}}, C)
    gc.check("rfft.dim1." .. norm, function(x) return tp.fft.rfft(x, {dim = 1, norm = norm}) end, {{5, 2}})
  end
  gc.check("fft.n", function(z) return tp.fft.fft(z, {n = 3, dim = 1}) end, {{5, 2}}, C)
  gc.check("fft.pad", function(z) return tp.fft.fft(z, {n = 6}) end, {{4}}, C)
  gc.check("rfft.n", function(x) return tp.fft.rfft(x, {n = 4}) end, {{6}})
  gc.check("irfft.n", function(z) return tp.fft.irfft(z, {n = 9}) end, {{4}}, C)
  gc.check("fftn.s", function(z) return tp.fft.fftn(z, {s = {3, 2}}) end, {{2, 3}}, C)
  gc.check("fftshift", function(z) return tp.fft.fftshift(tp.fft.fft(z)) end, {{5}}, C)
  gc.check("irfft(rfft)", function(x) return tp.fft.irfft(tp.fft.rfft(x)):sin() end, {{6}})
  -- Parseval: sum |fft(x)|^2 = n sum x^2, so the gradient is 2 n x.
  local x = gc.tensor({1, -2, 0.5, 3}, {4})
  near(tp.grad((tp.fft.fft(x):abs() ^ 2):sum(), {x})[1]:totable(), {8, -16, 4, 24}, 1e-12)
end)

-- A transform along a split dim: the gradient's transform is planned (and moved) like the forward.
test("fft.split", function()
  local z = gc.tensor(gc.values(64, -1, 1), {4, 8}, true)
  local y = tp.fft.fft(z:constrain(tp.grid{1, 2}), {dim = 2})
  local g = tp.grad((y:abs() ^ 2):sum(), {z})[1]  -- Parseval again: 2 n z
  near(gc.values_of(g), gc.values_of(z * 16), 1e-10)
end)

test("errors", function()
  local z = gc.tensor({1, 2}, {1}, true)
  err(function() return tp.grad(z:sum(), {z}) end, "tp.grad", "loss must be a real float", "c128")
  local i = tp.tensor({1, 2}, {dtype = "i64"})
  err(function() return tp.grad(z:abs():sum(), {i}) end, "tp.grad", "params[1] is i64", "c64, c128")
end)

check.summary()
