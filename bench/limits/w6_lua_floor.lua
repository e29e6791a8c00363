-- W6's Lua floor: bench/w6_cg.lua's loop, run by the same interpreter (tapestry's embedded Lua),
-- over objects that do nothing. Each iteration makes the objects W6 makes (one per operation
-- and per scalar-times-tensor, each with a finalizer, as a Tensor has), dispatches the same
-- operators and methods and observes two numbers: what any engine that gives Lua one object per
-- operation pays before it computes anything. Compared with the plain C++ loop (bench_limits
-- --only cg) it bounds how close to that loop a Lua-driven W6 can come.
--   tapestry bench/limits/w6_lua_floor.lua      (BENCH_SMALL=1: 10 iterations, one pass)
-- Prints "LIMIT lua_floor <seconds> s <what>", the best of 7 passes of 1000 iterations, as
-- bench_limits prints its limits (bench/run reads both).
local small = os.getenv("BENCH_SMALL") == "1"
local iters = small and 10 or 1000
local passes = small and 1 or 7

local Obj = {}
Obj.__index = Obj
local function new() return setmetatable({}, Obj) end
Obj.__gc = function() end  -- a Tensor releases its node here
Obj.__mul = function() return new() end
Obj.__add = function() return new() end
Obj.__sub = function() return new() end
function Obj.matmul() return new() end
function Obj.sum() return new() end
function Obj.item() return 1.0 end
local function eval(t) return t end  -- tp.eval returns its argument

local TINY = 1e-30
local function cg(A, b)
  local x = new()
  local r, p = b, b
  local rr = (r * r):sum():item()
  for _ = 1, iters do
    local Ap = A:matmul(p)
    local alpha = rr / math.max((p * Ap):sum():item(), TINY)
    x = eval(x + alpha * p)
    r = eval(r - alpha * Ap)
    local rr_new = (r * r):sum():item()
    p = eval(r + (rr_new / math.max(rr, TINY)) * p)
    rr = rr_new
  end
  return x
end

local best = math.huge
local A = new()
for pass = 0, passes do  -- pass 0 warms up
  local b = new()
  collectgarbage()
  local t0 = tp.clock()
  cg(A, b)
  local t = tp.clock() - t0
  if pass > 0 then best = math.min(best, t) end
end
print(string.format("LIMIT lua_floor %.6g s W6's loop in Lua over objects that do nothing, %d iterations",
                    best, iters))
