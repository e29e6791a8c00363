-- postgresql:// databases: tp.load_sql and tp.save_sql against a throwaway server started
-- here (pg_server.py), checked with psql as the reference reader; skipped (exit 77) where the
-- server binaries are not installed. Runs on one rank, 3 virtual ranks and mpirun -n 2.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, mistake = check.test, check.eq, check.mistake

local dir, path = check.scratch_dir()
local here = arg[0]:match("^(.*)/") or "."
local server = string.format("python3 '%s/pg_server.py'", here)
local ok, _, code = os.execute(server .. " start '" .. dir .. "' '" .. path("url") .. "'")
if not ok then
  os.execute("rm -rf '" .. dir .. "'")
  if code == 77 then os.exit(77) end
  error("the PostgreSQL server did not start (exit " .. tostring(code) .. ")")
end
local url = check.read_file(path("url"))

local function psql(sql)
  local p = io.popen("psql '" .. url .. "' -Atc \"" .. sql .. "\" 2>&1")
  local out = p:read("a")
  p:close()
  return (out:gsub("%s+$", ""))
end

local x = tp.arange(1, 24):reshape{8, 3} / 4

test("postgres.round_trip", function()
  tp.save_sql(x, url, "t", {columns = {"a", "b", "c"}})
  local y, names, skipped = tp.load_sql(url, "SELECT a, b, c FROM t ORDER BY a")
  eq(names, {"a", "b", "c"})
  eq(skipped, {})
  eq(y:totable(), x:totable())
  eq(psql("SELECT sum(a + b + c) FROM t"), tostring(math.tointeger((x:sum()):item()) or (x:sum()):item()))
  -- integers and bools, and f64
  tp.save_sql(tp.arange(1, 5, {dtype = "i64"}) * 1000000000000, url, "big")
  eq(tp.load_sql(url, "SELECT c1 FROM big ORDER BY c1", {dtype = "i64"}):totable(),
    {{1000000000000}, {2000000000000}, {3000000000000}, {4000000000000}, {5000000000000}})
  tp.save_sql(tp.tensor({true, false, true}), url, "flags")
  eq(psql("SELECT count(*) FROM flags WHERE c1"), "2")
end)

test("postgres.nulls_text_and_append", function()
  tp.save_sql(tp.tensor({{1, 0 / 0}, {3, 4}}), url, "n")  -- NaN is written as NULL
  eq(psql("SELECT count(*) FROM n WHERE c2 IS NULL"), "1")
  local v, names, skipped = tp.load_sql(url, "SELECT c1, c2, 'label' AS s, c1::numeric / 3 AS third FROM n ORDER BY c1")
  eq(names, {"c1", "c2", "third"})
  eq(skipped, {"s"})
  check.truthy(v[{1, 2}]:item() ~= v[{1, 2}]:item(), "NULL reads as NaN")
  check.near(v[{2, 3}]:item(), 1, 1e-6)
  tp.save_sql(tp.tensor({{5, 6}}), url, "n", {append = true})
  eq(psql("SELECT count(*) FROM n"), "3")
end)

mistake("postgres.writing_query", function() tp.load_sql(url, "DELETE FROM t") end, "tp.load_sql", "read-only transaction")
mistake("postgres.two_statements", function() tp.load_sql(url, "SELECT 1; SELECT 2") end, "tp.load_sql",
  "cannot insert multiple commands")
mistake("postgres.null_integer", function() tp.load_sql(url, "SELECT c2 FROM n", {dtype = "i32"}) end,
  "column 'c2' is NULL")
mistake("postgres.password_hidden", function()
  local e = select(2, pcall(tp.load_sql, "postgresql://u:secret@127.0.0.1:1/x", "SELECT 1"))
  check.truthy(not tostring(e):find("secret", 1, true), tostring(e))
  error(e)
end, "tp.load_sql", "postgresql://u:***@127.0.0.1:1/x", "cannot connect")

os.execute(server .. " stop '" .. dir .. "'")
os.execute("rm -rf '" .. dir .. "'")
check.summary()
