-- A 4096-element f64 sort (values and indices), and a batch of rows sorted each: the sort of
-- issue 24. Under `mpirun -n 2` the 1-D sort runs on one rank (a sort dim is never split; the
-- plan gathers the line), while the rows of the batch are split over the ranks.
--   mpirun -n 2 tapestry bench/sort/sort.lua          (BENCH_SMALL=1: one timed run)
-- Each run sorts fresh values (a new seed): an identical expression would read back the value
-- computed the first time. tp.eval keeps the results where they were computed.
local B = dofile((arg[0]:match("(.*/)") or "./") .. "../common.lua")
local ranks = B.ranks()

local function bench(name, shape)
  local median = B.time(function(i)
    return tp.eval(tp.rand(shape, {seed = 100 + i, dtype = "f64"}))
  end, function(x)
    tp.eval(x:sort())
  end)
  B.report(name, "tapestry", median, string.format("shape={%s} ranks=%d", table.concat(shape, ","), ranks))
end

bench("SORT4096", {4096})
bench("SORTROWS", {256, 4096})
