-- A 4096-element f64 sort (values and indices), a 2^20-element one, and a batch of rows sorted
-- each: the sort of issue 24. Under `mpirun -n 2` the 4096-element line is gathered and sorted
-- on one rank (shorter than TAPESTRY_SAMPLE_SORT_MIN, 2^20), the 2^20-element one is a sample
-- sort over both ranks (engine/ir/build/sample_sort.hpp), and the rows of the batch are split
-- over the ranks; the 10 largest of 2^20 (TOPK1M) are each rank's 10 best, then the best of
-- those 20 (build::topk_chunked: no observation); tp.unique of 2^20 (UNIQUE1M_1K: 1000 distinct
-- values; UNIQUE1M: all distinct) sorts and deduplicates each rank's chunk, then merges the
-- chunks' distinct values in buckets across the ranks (engine/ir/build/unique.hpp).
--   mpirun -n 2 tapestry bench/sort/sort.lua          (BENCH_SMALL=1: one timed run)
-- Each run sorts fresh values (a new seed): an identical expression would read back the value
-- computed the first time. tp.eval keeps the results where they were computed.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "../common.lua")
local ranks = B.ranks()

local function bench(name, shape, run, scale)
  local median = B.time(function(i)
    local x = tp.rand(shape, {seed = 100 + i, dtype = "f64"})
    return tp.eval(scale and (x * scale):floor() or x)
  end, run or function(x)
    tp.eval(x:sort())
  end)
  B.report(name, "tapestry", median, string.format("shape={%s} ranks=%d", table.concat(shape, ","), ranks))
end

bench("SORT4096", {4096})
if not B.small then
  bench("SORT1M", {1048576})
  bench("TOPK1M", {1048576}, function(x) tp.eval(tp.topk(x, 10)) end)
  -- 2^20 values in 1000 distinct, and 2^20 nearly all distinct: values and counts.
  local function unique(x) tp.eval(tp.unique(x, {return_counts = true})) end
  bench("UNIQUE1M_1K", {1048576}, unique, 1000)
  bench("UNIQUE1M", {1048576}, unique)
end
bench("SORTROWS", {256, 4096})
