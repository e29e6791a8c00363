-- Printing observes only what it shows: a sharded tensor over the print threshold gathers only
-- its printed corners (under 1 MiB for 4096^2 f32 on any number of ranks, where the whole is
-- 64 MiB), keeps no gathered copy, and every layout report agrees before and after.
-- Run on 1 rank, on 4 virtual ranks and under mpirun -n 2 and -n 4.
local ranks = tp.mesh().ranks
tp.env.x = tp.rand({4096, 4096}, {seed = 7})
tp.eval(tp.env.x)
local x = tp.env.x
local layout = tostring(x:layout())
local before = tp.stats()
local text = tostring(x)
local after = tp.stats()
local moved = after.bytes_moved - before.bytes_moved
print(string.format("printing a 4096^2 f32 tensor on %d rank(s) moved %d bytes", ranks, moved))
assert(moved < 1024 * 1024, "printing moved " .. moved .. " bytes")
assert(after.bytes_live <= before.bytes_live + 1024 * 1024,
       "printing kept a copy: " .. before.bytes_live .. " -> " .. after.bytes_live .. " bytes live")

-- The corners are the tensor's: the first and last three of each dim, as numpy shows them.
local function fmt(v) return string.format("%.4f", v) end
local corner = x[{{1, 3}, {1, 3}}]:totable()
local last = x[{{4094, 4096}, {4094, 4096}}]:totable()
local lines = {}
for line in text:gmatch("[^\n]+") do lines[#lines + 1] = line end
assert(#lines == 8, "7 rows (3, ..., 3) and the footer, got " .. #lines .. ":\n" .. text)
local first_row = {}
for v in lines[1]:gmatch("%d%.%d+") do first_row[#first_row + 1] = tonumber(v) end
for j = 1, 3 do
  assert(fmt(first_row[j]) == fmt(corner[1][j]), "corner [1][" .. j .. "]: " .. lines[1])
end
local last_row = {}
for v in lines[7]:gmatch("%d%.%d+") do last_row[#last_row + 1] = tonumber(v) end
for j = 1, 3 do
  assert(fmt(last_row[3 + j]) == fmt(last[3][j]), "corner [4096][" .. 4093 + j .. "]: " .. lines[7])
end
assert(lines[4]:find("^ %.%.%.$"), "the summarized rows: " .. lines[4])
assert(lines[1]:find(" %.%.%. "), "the summarized columns: " .. lines[1])

-- One truth about layouts: x:layout(), the footer and tp.tensors() say the same before and
-- after printing (and after a read that gathers the whole).
local footer = lines[8]
if ranks > 1 then
  assert(footer == "[f32 tensor of shape {4096,4096}, computed as " .. layout .. "]", footer .. " vs " .. layout)
else
  assert(footer == "[f32 tensor of shape {4096,4096}]", footer)
end
assert(tostring(x:layout()) == layout, "x:layout() after printing: " .. tostring(x:layout()))
local _ = x:sum():item()
for _, t in ipairs(tp.tensors()) do
  if t.name == "x" and ranks > 1 then assert(t.layout == layout, "tp.tensors(): " .. t.layout) end
end

-- numpy's print options.
local small = tp.arange(1, 24):reshape{2, 3, 4}
assert(not tostring(small):find("...", 1, true), "24 elements print whole")
tp.set_printoptions{threshold = 10, edgeitems = 1, precision = 2, linewidth = 40}
local s = tostring(small / 3)
assert(s:find("[[[0.33 ... 1.33]", 1, true), s)
assert(s:find(" ...\n", 1, true), s)
local o = tp.get_printoptions()
assert(o.threshold == 10 and o.edgeitems == 1 and o.precision == 2 and o.linewidth == 40)
local ok, err = pcall(tp.set_printoptions, {edgeitems = 0})
assert(not ok and err:find("edgeitems must be in 1..1000000, got 0", 1, true), err)
ok, err = pcall(tp.set_printoptions, {width = 3})
assert(not ok and err:find("width", 1, true), err)
tp.set_printoptions{threshold = 1000, edgeitems = 3, precision = 8, linewidth = 75}
print("ok")
