-- tp.fft.rfft (FFTW's r2c) beside tp.fft.fft of the same real values (the complex transform of
-- x cast to complex, which rfft was before), in one run, on 2^20 f64 values and on 256 rows of
-- 4096, and irfft (FFTW's c2r) back from their spectra (IRFFT1M, IRFFTROWS); and 200 small
-- transforms of one layout (a {64, 64} f32 rfft along rows), where the cached FFTW plan counts.
--   tapestry bench/fft/rfft.lua     (BENCH_SMALL=1: tiny sizes, one run)
-- bench/fft/run times numpy.fft.rfft on the same sizes in the same run.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "../common.lua")
local cases = B.small and {{"RFFT1M", {1024}}, {"RFFTROWS", {4, 64}}}
                       or {{"RFFT1M", {1 << 20}}, {"RFFTROWS", {256, 4096}}}
for _, c in ipairs(cases) do
  local name, shape = c[1], c[2]
  local make = function(i) return tp.eval(tp.rand(shape, {seed = 100 + i, dtype = "f64"})) end
  local r = B.time(make, function(x) tp.eval(tp.fft.rfft(x)) end)
  local f = B.time(make, function(x) tp.eval(tp.fft.fft(x)) end)
  B.report(name, "tapestry-rfft", r, "shape=" .. table.concat(shape, "x") .. " f64")
  B.report(name, "tapestry-fft", f, string.format("rfft/fft %.2f", r / f))
  -- irfft (FFTW's c2r) of the n/2+1 frequencies of such a line, made before the clock starts.
  local spectrum = function(i) return tp.eval(tp.fft.rfft(tp.rand(shape, {seed = 200 + i, dtype = "f64"}))) end
  local n = shape[#shape]
  local ir = B.time(spectrum, function(z) tp.eval(tp.fft.irfft(z, {n = n})) end)
  B.report("I" .. name, "tapestry-irfft", ir, "shape=" .. table.concat(shape, "x") .. " f64 out")
end
local small = B.time(function(i)
  local xs = {}
  for k = 1, B.small and 2 or 200 do xs[k] = tp.rand({64, 64}, {seed = 1000 * i + k}) end
  tp.eval(table.unpack(xs))
  return xs
end, function(xs)
  for _, x in ipairs(xs) do tp.eval(tp.fft.rfft(x)) end
end)
B.report("RFFTSMALL", "tapestry", small, "200 x {64,64} f32, each its own graph")
