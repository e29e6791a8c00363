-- A tiny test harness for the Lua op tests (run by the real tapestry binary).
--   local check = require "check"
--   check.test("sum.keepdim", function() check.eq(x:sum(1):totable(), {3, 4}) end)
--   check.summary()   -- prints "N passed, M failed", exits 1 on failure
local check = {}

local passed, failed = 0, 0

local function show(v, depth)
  depth = depth or 0
  if type(v) ~= "table" then
    if math.type(v) == "float" then return string.format("%.17g", v) end
    return tostring(v)
  end
  if depth > 3 then return "{...}" end
  local parts = {}
  for i = 1, math.min(#v, 12) do parts[#parts + 1] = show(v[i], depth + 1) end
  if #v > 12 then parts[#parts + 1] = "..." end
  for k, x in pairs(v) do
    if math.type(k) ~= "integer" or k < 1 or k > #v then
      parts[#parts + 1] = tostring(k) .. "=" .. show(x, depth + 1)
    end
  end
  return "{" .. table.concat(parts, ",") .. "}"
end
check.show = show

-- Runs fn as one named case; a failure is counted and reported, never fatal.
function check.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    passed = passed + 1
  else
    failed = failed + 1
    print("FAIL " .. name .. ": " .. tostring(err))
  end
end

local function close(g, w, tol)
  if type(g) ~= "number" or type(w) ~= "number" then return g == w end
  if w ~= w then return g ~= g end                           -- nan
  if w == math.huge or w == -math.huge then return g == w end
  if tol == 0 then return g == w end
  return math.abs(g - w) <= tol * math.max(math.abs(w), 1)
end

-- Deep comparison; returns a path to the first difference, or nil.
local function diff(g, w, tol, path)
  if type(w) == "table" then
    if type(g) ~= "table" then return path .. ": got " .. show(g) .. ", want a table" end
    if #g ~= #w then return path .. ": length " .. #g .. ", want " .. #w end
    for k, x in pairs(w) do
      local d = diff(g[k], x, tol, path .. "[" .. tostring(k) .. "]")
      if d then return d end
    end
    return nil
  end
  if not close(g, w, tol) then return path .. ": got " .. show(g) .. ", want " .. show(w) end
end

function check.eq(got, want, msg)
  local d = diff(got, want, 0, "value")
  if d then error((msg and msg .. ": " or "") .. d, 2) end
end

function check.near(got, want, tol, msg)
  local d = diff(got, want, tol or 1e-5, "value")
  if d then error((msg and msg .. ": " or "") .. d, 2) end
end

function check.truthy(v, msg)
  if not v then error(msg or "expected a true value", 2) end
end

-- fn must raise an error containing every given string (plain find); returns the message.
function check.check_error(fn, ...)
  local ok, err = pcall(fn)
  if ok then error("expected an error, got none", 2) end
  err = tostring(err)
  for _, s in ipairs({...}) do
    if not string.find(err, s, 1, true) then
      error("error message lacks '" .. s .. "': " .. err, 2)
    end
  end
  return err
end

check.tol = {f32 = 1e-5, f64 = 1e-12, i32 = 0, i64 = 0, bool = 0}

-- A tensor against a reference value (lib/ref.lua): dtype, shape and values.
function check.same(x, r, tol, msg)
  local m = msg and msg .. ": " or ""
  if x.dtype ~= r.dtype then error(m .. "dtype " .. tostring(x.dtype) .. ", want " .. r.dtype, 2) end
  local d = diff(x.shape, r.shape, 0, "shape")
  if d then error(m .. d, 2) end
  local got = #r.shape == 0 and x:item() or x:totable()
  local ref = require "ref"
  d = diff(got, ref.totable(r), tol or check.tol[r.dtype], "value")
  if d then error(m .. d, 2) end
end

-- One user mistake: fn must fail with a message holding every string; afterwards
-- the session still computes and a tensor named before the error is intact.
function check.mistake(name, fn, ...)
  local strings = {...}
  check.test(name, function()
    tp.env.keep = tp.ones{2}
    tp.eval(tp.env.keep)
    local err = check.check_error(fn, table.unpack(strings))
    print("ok: " .. err)
    check.eq((tp.arange(1, 4) * 2):sum():item(), 20, "session after the error")
    check.eq(tp.env.keep:sum():item(), 2, "named tensor after the error")
    check.eq(tp.env.keep.shape, {2})
  end)
end

-- A fresh folder for a test file's scratch files (the file removes it with rm -rf at its end),
-- and a function naming a file in it.
function check.scratch_dir()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p '" .. dir .. "'")
  return dir, function(name) return dir .. "/" .. name end
end

-- A file's bytes.
function check.read_file(p)
  local f = assert(io.open(p, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- Two tensors alike in dtype, shape and every value (exactly).
function check.same_tensor(got, want, what)
  check.eq(got.dtype, want.dtype, what)
  check.eq(got.shape, want.shape, what)
  check.truthy(got:eq(want):all():item(), what .. ": values differ")
end

function check.summary()
  print(string.format("%d passed, %d failed", passed, failed))
  if failed > 0 then os.exit(1) end
end

return check
