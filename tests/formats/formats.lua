-- The Lua half of reference.py: loads the reference tools' files, checks them against the
-- values they hold (want.*.npy), and writes out.* from those values for the tools to read.
--   tapestry formats.lua FORMAT DIR
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lua/lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

local fmt, dir = arg[1], arg[2]
local names = {"layer.0.weight", "bias", "idx", "counts", "mask", "scale"}

local function want(name) return tp.load(dir .. "/want." .. name .. ".npy") end

-- Exactly equal: same dtype, shape and every value.
local function same(got, w, what)
  eq(got.dtype, w.dtype, what .. " dtype")
  eq(got.shape, w.shape, what .. " shape")
  check.truthy(got:eq(w):all():item(), what .. ": values differ")
end

local formats = {}

function formats.safetensors()
  test("safetensors.load_reference", function()
    local t, meta = tp.load_safetensors(dir .. "/ref.safetensors")
    eq(meta, {format = "pt", note = "hand-built"})
    for _, n in ipairs(names) do same(t[n], want(n), n) end
    local count = 0
    for _ in pairs(t) do count = count + 1 end
    eq(count, #names)
  end)
  test("safetensors.save_for_reference", function()
    local t = {}
    for _, n in ipairs(names) do t[n] = want(n) end
    t["layer.0.weight"] = t["layer.0.weight"] * 1  -- an expression, computed then written
    tp.save_safetensors(t, dir .. "/out.safetensors", {metadata = {writer = "tapestry"}})
  end)
end

assert(formats[fmt], "unknown format " .. tostring(fmt))()
check.summary()
