-- Argument checks shared by the stdlib modules (internal: require "tapestry.args").
-- Every check raises an error that starts with the public function's name, as the C++
-- bindings do: "tapestry.nn.linear: w must be 2-D, got {3}". Errors are raised at level 0
-- (no "file:line:" prefix) so they read the same as errors from tp itself.
local args = {}

-- "{3,4}" for a shape table; "{}" for a scalar.
function args.shape_str(shape)
  return "{" .. table.concat(shape, ",") .. "}"
end

function args.fail(fname, fmt, ...)
  error(fname .. ": " .. string.format(fmt, ...), 0)
end

function args.is_tensor(x)
  if type(x) ~= "userdata" then return false end
  local mt = getmetatable(x)
  return type(mt) == "table" and mt.__name == "Tensor"
end

-- The Lua type, or "Tensor {shape} dtype", for messages.
local function describe(x)
  if args.is_tensor(x) then return "a Tensor of shape " .. args.shape_str(x.shape) end
  return type(x)
end

-- x must be a Tensor; with allow_number a Lua number is accepted too (as a scalar).
function args.tensor(fname, name, x, allow_number)
  if args.is_tensor(x) then return x end
  if allow_number and type(x) == "number" then return x end
  args.fail(fname, "%s must be a Tensor%s, got %s", name, allow_number and " or a number" or "",
            describe(x))
end

-- x must be a Tensor of exactly n dimensions (n may be a table of allowed counts).
function args.dims(fname, name, x, n)
  args.tensor(fname, name, x)
  local d = x:dim()
  if type(n) == "table" then
    for _, k in ipairs(n) do
      if d == k then return x end
    end
    local s = {}
    for i, k in ipairs(n) do s[i] = k .. "-D" end
    args.fail(fname, "%s must be %s, got %s", name, table.concat(s, " or "), args.shape_str(x.shape))
  end
  if d ~= n then args.fail(fname, "%s must be %d-D, got %s", name, n, args.shape_str(x.shape)) end
  return x
end

-- x must be a Tensor with at least n dimensions.
function args.min_dims(fname, name, x, n)
  args.tensor(fname, name, x)
  if x:dim() < n then
    args.fail(fname, "%s must have at least %d dimension%s, got %s", name, n, n == 1 and "" or "s",
              args.shape_str(x.shape))
  end
  return x
end

-- x must have a floating dtype (the math below would truncate or overflow otherwise).
function args.float(fname, name, x)
  if args.is_tensor(x) and x.dtype ~= "f32" and x.dtype ~= "f64" then
    args.fail(fname, "%s must be f32 or f64, got %s", name, x.dtype)
  end
  return x
end

-- A Lua number with an integral value (3 and 3.0 both count).
function args.is_int(v)
  return type(v) == "number" and v == math.floor(v) and v == v and math.abs(v) < 2^53
end

-- A dimension argument: an integer in 1..rank or -rank..-1; returns it as a positive index.
function args.dim(fname, name, d, rank)
  if not args.is_int(d) then
    args.fail(fname, "%s must be an integer dimension, got %s", name, tostring(d))
  end
  d = math.tointeger(d)
  if d < -rank or d > rank or d == 0 then
    args.fail(fname, "%s = %d is out of range for a %d-D tensor", name, d, rank)
  end
  return d < 0 and rank + d + 1 or d
end

-- An options table (or nil); every key must be one of `allowed`. Returns a table.
function args.opts(fname, opts, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then args.fail(fname, "opts must be a table, got %s", describe(opts)) end
  for k in pairs(opts) do
    local ok = false
    for _, a in ipairs(allowed) do
      if k == a then ok = true break end
    end
    if not ok then
      args.fail(fname, "unknown option '%s' (expected one of: %s)", tostring(k), table.concat(allowed, ", "))
    end
  end
  return opts
end

-- An optional positive number option.
function args.positive(fname, name, v, default)
  if v == nil then return default end
  if type(v) ~= "number" or not (v > 0) then
    args.fail(fname, "%s must be a positive number, got %s", name, tostring(v))
  end
  return v
end

-- An optional positive integer option.
function args.count(fname, name, v, default)
  if v == nil then return default end
  if not args.is_int(v) or v < 1 then
    args.fail(fname, "%s must be a positive integer, got %s", name, tostring(v))
  end
  return math.tointeger(v)
end

return args
