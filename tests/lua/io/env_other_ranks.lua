-- A checkpoint written on one rank count loads on another: files hold global shapes, not
-- shards. Saves here, then loads and checks in a child tapestry on TAPESTRY_RANKS=3 (and back).
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local tapestry = arg[-1]
local function tmp()
  local p = os.tmpname()
  os.remove(p)
  return p
end

-- Runs chunk in a child tapestry with `ranks` virtual ranks; returns its stdout.
local function child(ranks, chunk)
  local script = tmp() .. ".lua"
  local f = assert(io.open(script, "w"))
  f:write(chunk)
  f:close()
  local p = assert(io.popen("TAPESTRY_RANKS=" .. ranks .. " '" .. tapestry .. "' '" .. script
    .. "' 2>&1"))
  local out = p:read("a")
  local ok = p:close()
  os.remove(script)
  if not ok then error("child failed: " .. out) end
  return out
end

test("env.one_rank_to_three_and_back", function()
  local dir = tmp() .. "-ckpt"
  tp.env.m = tp.arange(1, 35):reshape{5, 7}
  tp.env.v = tp.linspace(0, 1, 11, {dtype = "f64"})
  tp.save_env(dir)
  local want = (tp.env.m:sum(1) * 2):totable()
  -- On 3 ranks: load, compute sharded, save the result into a second checkpoint.
  local out = child(3, ([[
    local names = tp.load_env(%q)
    assert(#names == 2, #names)
    tp.env.r = tp.env.m:sum(1) * 2
    tp.env.v = tp.env.v + 1
    tp.save_env(%q)
    print("child ranks " .. tp.mesh().ranks)
  ]]):format(dir, dir .. "2"))
  check.truthy(out:find("child ranks 3", 1, true), out)
  local back = tp.load_env(dir .. "2")
  table.sort(back)
  eq(back, {"m", "r", "v"})
  eq(tp.env.r:totable(), want)
  check.near(tp.env.v:totable(), (tp.linspace(0, 1, 11, {dtype = "f64"}) + 1):totable(), 1e-15)
  os.execute("rm -rf '" .. dir .. "' '" .. dir .. "2'")
  tp.env.m, tp.env.v, tp.env.r = nil, nil, nil
end)

check.summary()
