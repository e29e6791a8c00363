-- CSV and TSV: round trips of every dtype, headers, column selection, and the bad inputs.
-- Runs on one rank, 3 virtual ranks and under mpirun -n 2 (files from Python's csv module
-- are checked by tests/formats/reference.py).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, mistake = check.test, check.eq, check.mistake

local dir, path = check.scratch_dir()
local function write(name, text)
  local f = assert(io.open(path(name), "wb"))
  f:write(text)
  f:close()
end
local function read(name)
  local f = assert(io.open(path(name), "rb"))
  local s = f:read("a")
  f:close()
  return s
end

test("csv.round_trip_dtypes", function()
  local x = tp.arange(1, 60):reshape{20, 3} / 7 - 3
  for _, dt in ipairs({"f32", "f64", "i32", "i64"}) do
    local v = x:cast(dt)
    tp.save_csv(v, path("r.csv"), {columns = {"a", "b", "c"}})
    local back, names = tp.load_csv(path("r.csv"), {dtype = dt})
    eq(names, {"a", "b", "c"})
    check.truthy(back:eq(v):all():item(), dt .. ": values differ")
  end
  local b = (tp.arange(1, 10) % 3):eq(0)
  tp.save_csv(b, path("b.csv"))
  eq(read("b.csv"), "0\n0\n1\n0\n0\n1\n0\n0\n1\n0\n")
  eq(tp.load_csv(path("b.csv"), {dtype = "bool"}):reshape{10}:totable(), b:totable())
end)

test("csv.text", function()
  write("t.csv", 'name,x,y\n"a, ""b""",1.5,2\nc,,3e2\r\nd,-4,"5"\n\n')
  local x, names = tp.load_csv(path("t.csv"), {columns = {"y", 2}, dtype = "f64"})
  eq(names, {"y", "x"})
  eq(x.shape, {3, 2})
  eq(x[{{}, 1}]:totable(), {2, 300, 5})
  check.truthy(x[{2, 2}]:ne(x[{2, 2}]):item(), "an empty field is NaN")
  -- no header: names are column numbers; a header forced off with text in it is an error
  write("n.csv", "1;2\n3;4\n")
  local n, nn = tp.load_csv(path("n.csv"), {delimiter = ";", name = "n"})
  eq(nn, {"1", "2"})
  eq(tp.env.n:totable(), {{1, 2}, {3, 4}})
  eq(n.name, "n")
  local h, hn = tp.load_csv(path("n.csv"), {delimiter = ";", header = true})
  eq(hn, {"1", "2"})
  eq(h:totable(), {{3, 4}})
end)

test("csv.tsv", function()
  tp.save_csv(tp.arange(1, 6):reshape{3, 2}, path("x.tsv"))
  eq(read("x.tsv"), "1\t2\n3\t4\n5\t6\n")
  eq(tp.load_csv(path("x.tsv")):totable(), {{1, 2}, {3, 4}, {5, 6}})
end)

test("csv.lazy", function()
  -- The load reads the text once to find its rows and parses none but the first; an observation
  -- of a few rows reads the span of the file around them and parses those rows only.
  local mpi = os.getenv("OMPI_COMM_WORLD_SIZE") ~= nil
  local x = tp.arange(1, 3000 * 3):reshape{3000, 3}
  tp.save_csv(x, path("big.csv"), {columns = {"a", "b", "c"}})
  local size = #read("big.csv")
  local before = tp.stats().bytes_read
  local t = tp.load_csv(path("big.csv"))
  eq(tp.stats().bytes_read - before, size, "the index: one pass over the text")
  before = tp.stats().bytes_read
  eq(t[{{2001, 2002}}]:totable(), x[{{2001, 2002}}]:totable())
  local got = tp.stats().bytes_read - before
  check.truthy(got < size / 4 and (mpi or got > 0), "two rows read " .. got .. " bytes of " .. size)
  -- named: each rank parses its own rows
  tp.load_csv(path("big.csv"), {name = "bc", dtype = "i64"})
  check.same_tensor(tp.env.bc, x:cast("i64"), "named")
  -- a file rewritten since the load: an error, not a mix of two versions
  local u = tp.load_csv(path("big.csv"))
  tp.save_csv(x * 2, path("big.csv"))
  check.check_error(function() return u:sum():item() end, "big.csv", "changed since it was loaded")
  -- a bad field past the first row: found by the read that parses it, naming line, column, slice
  local lines = {"a,b"}
  for i = 1, 3000 do lines[#lines + 1] = i .. "," .. (i == 2500 and "oops" or i) end
  write("late.csv", table.concat(lines, "\n") .. "\n")
  local late = tp.load_csv(path("late.csv"))
  eq(late[{{1, 3}, 2}]:totable(), {1, 2, 3})
  local ok, err = pcall(function() return late:sum():item() end)
  check.truthy(not ok, "the bad field was not found")
  for _, want in ipairs({"late.csv", "slice", "line 2501, column 'b' (2): 'oops' is not a number"}) do
    check.truthy(tostring(err):find(want, 1, true), tostring(err))
  end
  if tp.mesh().ranks > 1 then check.truthy(tostring(err):find("rank %d"), tostring(err)) end
end)

test("csv.failed_save_keeps_file", function()
  tp.save_csv(tp.ones{2, 2}, path("keep.csv"))
  local before = read("keep.csv")
  check.truthy(not pcall(tp.save_csv, tp.ones{2, 2, 2}, path("keep.csv")))
  check.truthy(not pcall(tp.save_csv, tp.ones{2, 2}, path("keep.csv"), {columns = {"a"}}))
  eq(read("keep.csv"), before)
end)

write("ragged.csv", "1,2\n3\n")
write("int.csv", "1,\n2,3\n")
write("quote.csv", '1,"2\n')
mistake("csv.ragged", function() tp.load_csv(path("ragged.csv")) end, "tp.load_csv", "ragged.csv",
  "line 2 has 1 fields, line 1 has 2")
mistake("csv.empty_int", function() tp.load_csv(path("int.csv"), {dtype = "i32"}) end, "tp.load_csv",
  "line 1, column 2: '' is not an integer")
mistake("csv.open_quote", function() tp.load_csv(path("quote.csv")) end, "a quoted field is not closed")
mistake("csv.missing", function() tp.load_csv(path("none.csv")) end, "tp.load_csv", "none.csv", "cannot open")
mistake("csv.column_range", function() tp.load_csv(path("int.csv"), {columns = {3}}) end,
  "column 3 is out of range: the file has 2 columns")
mistake("csv.name_without_header", function() tp.load_csv(path("int.csv"), {columns = {"a"}}) end,
  "column 'a' asked for by name, but the file has no header row")
mistake("csv.bad_delimiter", function() tp.load_csv(path("int.csv"), {delimiter = ",,"}) end,
  "bad argument #2 to 'tp.load_csv'", "delimiter")
mistake("csv.bad_columns", function() tp.load_csv(path("int.csv"), {columns = {true}}) end,
  "bad argument #2 to 'tp.load_csv'", "entry 1 is a boolean")
mistake("csv.save_3d", function() tp.save_csv(tp.ones{2, 2, 2}, path("x.csv")) end, "tp.save_csv",
  "1-D or 2-D", "{2,2,2}")
mistake("csv.save_columns", function() tp.save_csv(tp.ones{2, 3}, path("x.csv"), {columns = {"a"}}) end,
  "bad argument #3 to 'tp.save_csv'", "names 1 columns, x of shape {2,3} has 3")
mistake("csv.save_folder", function() tp.save_csv(tp.ones{2}, dir) end, "tp.save_csv", "is a folder")

os.execute("rm -rf '" .. dir .. "'")
check.summary()
