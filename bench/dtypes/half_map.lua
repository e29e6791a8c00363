-- The 16-bit floats on 2^22 (4M) elements, in one run (docs/dtypes.md, docs/performance.md):
--   HALFMAP  a * b + 0.5 in f32, f16 and bf16: the 16-bit maps read and write half the bytes,
--            and pay the conversions (f16 and bf16 are computed in f32, each op's result
--            rounded back);
--   HALFCAST f32 -> f16 / bf16 and back (the conversions alone: F16C for f16, integer
--            rounding for bf16).
--   tapestry bench/dtypes/half_map.lua     (BENCH_SMALL=1: 2^12, one run)
-- bench/dtypes/run times numpy's float16 (and float32) on the same work in the same run.
-- Prints RESULT HALFMAP|HALFCAST <dtype> <median s> and each 16-bit median over f32's.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "../common.lua")
local n = B.small and (1 << 12) or (1 << 22)

local med = {}
for _, dt in ipairs{"f32", "f16", "bf16"} do
  local b = tp.eval(tp.randn({n}, {seed = 2}):cast(dt))
  med[dt] = B.time(function(i)
    return tp.eval(tp.randn({n}, {seed = 100 + i}):cast(dt))  -- a fresh a: a new graph every run
  end, function(a)
    tp.eval(a * b + 0.5)
  end)
  B.report("HALFMAP", dt, med[dt], string.format("n=%d", n))
end
print(string.format("f16/f32 %.2fx  bf16/f32 %.2fx", med.f16 / med.f32, med.bf16 / med.f32))

for _, dt in ipairs{"f16", "bf16"} do
  local to = B.time(function(i) return tp.eval(tp.randn({n}, {seed = 200 + i})) end,
                    function(x) tp.eval(x:cast(dt)) end)
  B.report("HALFCAST", "f32->" .. dt, to, string.format("n=%d", n))
  local from = B.time(function(i) return tp.eval(tp.randn({n}, {seed = 300 + i}):cast(dt)) end,
                      function(h) tp.eval(h:cast("f32")) end)
  B.report("HALFCAST", dt .. "->f32", from, string.format("n=%d", n))
end
