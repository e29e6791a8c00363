-- The bad-input sweep (docs/reliability.md): every public function and method of the API
-- registry, as `tapestry --reference` lists it, called with wrong types, wrong arities, wrong
-- shapes, negative and zero sizes, NaN and inf, sizes that cannot be allocated and unknown
-- options. Each call must either succeed (the input happened to be valid; a returned tensor is
-- then computed too) or raise a clean Lua error (a string naming the function); the session
-- must survive: a named tensor keeps its value and a computation still gives the right answer.
--   tapestry sweep.lua /path/to/tapestry      (run from a scratch directory: some calls write files)
local tapestry = assert(arg[1], "usage: tapestry sweep.lua TAPESTRY")

-- --- the registry's names, from the reference --------------------------------------------
local ref = assert(io.popen(tapestry .. " --reference")):read("a")
local names, order = {}, {}
local function add(name)
  if not names[name] then names[name] = true; order[#order + 1] = name end
end
for line in ref:gmatch("[^\n]+") do
  local usage = line:match("^| `([^`]*)`")
  if usage then
    for f in usage:gmatch("tp%.([%a_][%w_]*)%f[^%w_%.]") do if f ~= "env" then add("tp." .. f) end end
    for f in usage:gmatch("tp%.linalg%.([%a_][%w_]*)%(") do add("linalg." .. f) end  -- tp.linalg is tapestry.linalg
    for m in usage:gmatch("%f[%w]%a:([%a_][%w_]*)%(") do add("Tensor:" .. m) end
    for m in usage:gmatch("%f[%w]x:([%a_][%w_]*){") do add("Tensor:" .. m) end
    for lib, f in usage:gmatch("^(%a+)%.([%a_][%w_]*)%(") do
      if lib == "nn" or lib == "fem" or lib == "linalg" then add(lib .. "." .. f) end
    end
  end
end
-- Functions of tp that the reference does not list are swept too (and reported).
for k, v in pairs(tp) do
  if type(v) == "function" and not names["tp." .. k] then
    print("note: tp." .. k .. " is not in the reference")
    add("tp." .. k)
  end
end
table.sort(order)

-- Not swept: operators and metamethods (tp.add etc. are their functions), tp.env (a table:
-- its bad names are tests/lua/errors/env_*.lua) and the shell's :commands (tests/repl).
local libs = {nn = require "tapestry.nn", fem = require "tapestry.fem", linalg = require "tapestry.linalg"}

-- --- the bad inputs -----------------------------------------------------------------------
local nan, inf = 0 / 0, math.huge
local function T() return tp.ones{2, 3} end  -- a fresh tensor per call (release, writes)
local function inputs()
  local t = T()
  return {
    {}, {nil}, {"str"}, {true}, {{}}, {print}, {nan}, {inf}, {-inf}, {-1}, {0}, {1.5}, {2^62}, {1e300},
    {{-3, 2}}, {{0, 2}}, {{nan, 2}}, {{inf}}, {{2^40, 2^40}}, {{2^31, 2^31, 2^31}}, {{1.5, 2}}, {{"a"}},
    {t}, {t, t}, {t, t, t, t, t, t}, {t, "str"}, {t, nan}, {t, inf}, {t, -inf}, {t, -1}, {t, 0}, {t, 99},
    {t, 2^62}, {t, {}}, {t, {nope = 1}}, {t, {1, 2, 3, 4, 5}}, {t, tp.ones{4}}, {t, tp.ones{3, 2}},
    {t, tp.ones{2, 3, 4, 5}}, {t, tp.tensor(true)}, {t, 1, {bogus_option = true}}, {t, nil, {keepdim = "yes"}},
    {t, {dtype = "f16"}}, {t, {dtype = 3}}, {{2, 3}, {bogus_option = 1}}, {{2, 3}, {dtype = "nope"}},
    {{2, 3}, 1, {bogus_option = 1}}, {{2, 3}, nan}, {{2^40}, 1}, {1, 2, 0}, {1, nan}, {nan, 1, 1},
    {1, 2^62, 1}, {1, 5, inf}, {5, nan}, {"ij,jk->ik", t, t}, {"ij->", t, t}, {"??", t}, {{t, t}, 3},
    {{t, tp.ones{4}}}, {{}, 1}, {{"a", "b"}}, {t, {{1, 2}, {3, 4}}}, {t, {{-1, 0}}}, {t, {1, 1}, {mode = "nope"}},
    {t, 2, {stride = 0}}, {t, 2, {padding = -1}}, {t, tp.ones{1, 1, 9, 9}}, {tp.ones{1, 1, 4, 4}, 99},
    {tp.ones{1, 1, 4, 4}, tp.ones{1, 1, 5, 5}}, {tp.ones{1, 1, 4, 4}, 2, {stride = nan}},
    {tp.ones{3, 3}, tp.ones{3}, {tol = nan}}, {tp.ones{3, 3}, tp.ones{3}, {maxiter = -1}},
    {tp.ones{3, 3}, {maxiter = inf}}, {tp.ones{2, 4}, tp.ones{4, 3}, "nope"},
    {tp.ones{2, 4}, {{4, 1, "relu"}}}, {tp.ones{2, 4}, tp.ones{2}}, {tp.ones{2, 4}, tp.ones{2, 4}, tp.ones{2, 4}, {mask = 1}},
    {"/nonexistent/dir/x.npy"}, {"/nonexistent/dir/x.npy", t}, {"sweep_out.npy", "str"}, {"sweep_dir", {}},
  }
end

-- A call "names the function" when its message holds the name's last part.
local function short(name) return name:match("[.:]([%a_][%w_]*)$") end

local keep_check = 0
local function session_ok()
  local ok, err = pcall(function()
    assert(tp.env.sweep_keep:sum():item() == 6, "named tensor changed")
    assert((tp.arange(1, 4) * 2):sum():item() == 20, "computation wrong")
  end)
  keep_check = keep_check + 1
  return ok, err
end

local calls, errors, successes, problems = 0, 0, 0, {}
local function problem(name, i, msg)
  problems[#problems + 1] = ("%s input %d: %s"):format(name, i, msg)
end

-- Runs one call under a step limit (a Lua loop that never ends is a hang; time in C++ is not
-- counted, so huge tensors must fail fast on their own).
local real_print = print
local function call(fn, args)
  print = function() end  -- tp.explain prints
  debug.sethook(function() error("sweep: step limit (a hang?)") end, "", 5e7)
  local res = table.pack(pcall(fn, table.unpack(args, 1, args.n)))
  if res[1] then  -- success: compute what came back, which may fail too, cleanly
    for i = 2, res.n do
      if getmetatable(res[i]) and getmetatable(res[i]).__name == "tapestry.Tensor" then
        local ok, err = pcall(tp.eval, res[i])
        if not ok then res = {false, err, n = 2}; break end
      end
    end
  end
  debug.sethook()
  print = real_print
  return res
end

local function sweep(name, fn, method)
  for i, args in ipairs(inputs()) do
    args.n = args.n or #args
    if method then  -- a valid receiver first, then the inputs; and once a wrong receiver
      table.insert(args, 1, T())
      args.n = args.n + 1
    end
    calls = calls + 1
    local res = call(fn, args)
    if res[1] then
      successes = successes + 1
    else
      errors = errors + 1
      local err = res[2]
      if type(err) ~= "string" then
        problem(name, i, "error is a " .. type(err) .. ", not a string")
      elseif err:find("step limit", 1, true) then
        problem(name, i, "hang: " .. err)
      elseif err:find("internal error", 1, true) then
        problem(name, i, "internal error: " .. err)
      elseif not err:find(short(name), 1, true) then
        problem(name, i, "error does not name the function: " .. err)
      end
    end
    local ok, why = session_ok()
    if not ok then problem(name, i, "session damaged: " .. tostring(why)) end
  end
  if method then  -- a wrong receiver (a number is a valid one: tp.abs(2) is x:abs() on a scalar,
    -- and so is an empty table: tp.abs({}) is the empty tensor's, as numpy's np.abs([]))
    for _, r in ipairs({"str", {"a"}, print}) do
      calls = calls + 1
      local res = call(fn, {r, n = 1})
      if res[1] then
        problem(name, 0, "accepted a " .. type(r) .. " receiver")
      else
        errors = errors + 1
        if type(res[2]) ~= "string" then problem(name, 0, "non-string error") end
      end
    end
  end
end

tp.env.sweep_keep = tp.ones{2, 3}
local swept = {}
for _, name in ipairs(order) do
  local lib, f = name:match("^(%a+)[.:]([%a_][%w_]*)$")
  local fn, method
  if lib == "tp" then fn = tp[f]
  elseif lib == "Tensor" then fn, method = T()[f], true
  else fn = libs[lib] and libs[lib][f] end
  if type(fn) ~= "function" then
    problem(name, 0, "listed in the reference but not callable")
  else
    sweep(name, fn, method)
    swept[name] = true
  end
end

-- Coverage: every registry entry of the reference was swept.
local missing = {}
for _, name in ipairs(order) do if not swept[name] then missing[#missing + 1] = name end end

print(("swept %d functions and methods: %d calls, %d clean errors, %d successes, %d session checks")
  :format(#order, calls, errors, successes, keep_check))
if #missing > 0 then print("not swept: " .. table.concat(missing, ", ")) end
for _, p in ipairs(problems) do print("PROBLEM " .. p) end
if #problems > 0 or #missing > 0 or #order < 100 then os.exit(1) end
print("ok")
