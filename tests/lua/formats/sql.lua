-- SQLite: round trips of every dtype, replacing and appending, the names, and the bad inputs.
-- Runs on one rank, 3 virtual ranks and under mpirun -n 2 (databases written with Python's
-- sqlite3 module are checked by tests/formats/reference.py).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, mistake = check.test, check.eq, check.mistake

local dir = check.scratch_dir()
local db = dir .. "/t.db"

test("sql.round_trip_dtypes", function()
  local x = tp.arange(1, 45):reshape{15, 3} / 4 - 2
  for _, dt in ipairs({"f32", "f64", "i32", "i64", "bool"}) do
    local v = x:cast(dt)
    tp.save_sql(v, db, "t_" .. dt, {columns = {"a", "b", "c"}})
    local back, names, skipped = tp.load_sql(db, "SELECT * FROM t_" .. dt, {dtype = dt})
    eq(names, {"a", "b", "c"})
    eq(skipped, {})
    check.truthy(back:eq(v):all():item(), dt .. ": values differ")
  end
end)

test("sql.replace_append_names", function()
  tp.save_sql(tp.arange(1, 4), db, "log")  -- 1-D: one column, named c1
  local x, names = tp.load_sql(db, "SELECT * FROM log")
  eq(names, {"c1"})
  eq(x.shape, {4, 1})
  tp.save_sql(tp.arange(1, 2), db, "log", {append = true})
  eq(tp.load_sql(db, "SELECT sum(c1) AS s FROM log"):item(), 13)
  tp.save_sql(tp.arange(5, 6), db, "log")  -- replaced
  eq(tp.load_sql(db, "SELECT c1 FROM log ORDER BY c1"):reshape{2}:totable(), {5, 6})
  -- quoted names, a query computing columns, text left out, NaN as NULL
  tp.save_sql(tp.tensor({{0 / 0, 1}, {2, 3}}), db, 'odd "name"', {columns = {"x y", 'q"'}})
  local v, n, s = tp.load_sql(db, 'SELECT "x y", \'txt\' AS t, "q""" * 2 AS d FROM "odd ""name"""', {name = "v"})
  eq(n, {"x y", "d"})
  eq(s, {"t"})
  eq(v.name, "v")
  eq(tp.env.v[{{}, 2}]:totable(), {2, 6})
  check.truthy(v[{1, 1}]:ne(v[{1, 1}]):item(), "NULL is NaN")
  eq(tp.load_sql(db, 'SELECT count(*) FROM "odd ""name""" WHERE "x y" IS NULL'):item(), 1)
end)

test("sql.failed_save_keeps_table", function()
  tp.save_sql(tp.ones{2, 2}, db, "keep", {columns = {"a", "b"}})
  -- appending columns the table does not have fails at the insert and changes nothing
  check.truthy(not pcall(tp.save_sql, tp.zeros{3, 2}, db, "keep", {columns = {"a", "zz"}, append = true}))
  eq(tp.load_sql(db, "SELECT * FROM keep"):totable(), {{1, 1}, {1, 1}})
end)

mistake("sql.missing_db", function() tp.load_sql(dir .. "/none.db", "SELECT 1") end, "tp.load_sql", "none.db",
  "cannot open the database")
mistake("sql.bad_query", function() tp.load_sql(db, "SELEC 1") end, "tp.load_sql", "t.db", "the query failed",
  "syntax error")
mistake("sql.writing_query", function() tp.load_sql(db, "DROP TABLE keep") end, "would change the database")
mistake("sql.two_statements", function() tp.load_sql(db, "SELECT 1; SELECT 2") end, "more than one statement")
mistake("sql.no_rows", function() tp.load_sql(db, "SELECT * FROM keep WHERE a > 5") end, "returns no rows")
mistake("sql.no_numeric", function() tp.load_sql(db, "SELECT 'a' AS s, x'00' AS b") end,
  "no numeric column (columns: s, b)")
mistake("sql.null_int", function() tp.load_sql(db, "SELECT NULL AS n", {dtype = "i64"}) end,
  "row 1, column 'n' is NULL, which i64 cannot hold")
mistake("sql.query_type", function() tp.load_sql(db, 3) end, "bad argument #2 to 'tp.load_sql'")
mistake("sql.save_3d", function() tp.save_sql(tp.ones{2, 2, 2}, db, "t") end, "tp.save_sql", "1-D or 2-D",
  "{2,2,2}")
mistake("sql.save_columns", function() tp.save_sql(tp.ones{2, 3}, db, "t", {columns = {"a"}}) end,
  "bad argument #4 to 'tp.save_sql'", "names 1 columns, the tensor has 3")
mistake("sql.save_no_table", function() tp.save_sql(tp.ones{2}, db, "") end, "tp.save_sql", "table name is empty")

os.execute("rm -rf '" .. dir .. "'")
check.summary()
