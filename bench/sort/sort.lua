-- A 4096-element f64 sort (values and indices), a 2^20-element one, and a batch of rows sorted
-- each: the sort of issue 24. Under `mpirun -n 2` the 4096-element line is gathered and sorted
-- on one rank (shorter than TAPESTRY_SAMPLE_SORT_MIN, 2^20), the 2^20-element one is a sample
-- sort over both ranks (engine/ir/build/sample_sort.hpp), and the rows of the batch are split
-- over the ranks; the 10 largest of 2^20 (TOPK1M) are each rank's 10 best, then the best of
-- those 20 (build::topk_chunked: no observation).
--   mpirun -n 2 tapestry bench/sort/sort.lua          (BENCH_SMALL=1: one timed run)
-- Each run sorts fresh values (a new seed): an identical expression would read back the value
-- computed the first time. tp.eval keeps the results where they were computed.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "../common.lua")
local ranks = B.ranks()

local function bench(name, shape, run)
  local median = B.time(function(i)
    return tp.eval(tp.rand(shape, {seed = 100 + i, dtype = "f64"}))
  end, run or function(x)
    tp.eval(x:sort())
  end)
  B.report(name, "tapestry", median, string.format("shape={%s} ranks=%d", table.concat(shape, ","), ranks))
end

bench("SORT4096", {4096})
if not B.small then
  bench("SORT1M", {1048576})
  bench("TOPK1M", {1048576}, function(x) tp.eval(tp.topk(x, 10)) end)
end
bench("SORTROWS", {256, 4096})
