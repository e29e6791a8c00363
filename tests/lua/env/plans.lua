-- tp.plan from Lua: exact plans on small meshes, estimated ones on big meshes (ops x ranks past
-- 4096), their cost tables, print and dot, and bad options.
local x = tp.rand({256, 64}, {seed = 1})
local w = tp.rand({64, 64}, {seed = 2})

local small = tp.plan(x:matmul(w):relu(), {mesh = 4})
local c = small:cost()
assert(c.estimated == false, "a 2-op plan on 4 ranks is costed exactly")
assert(c.time > 0 and c.flops > 0 and c.peak_bytes > 0, "cost fields")
assert(not tostring(small):find("rank 0:", 1, true), "print(plan) is one line per op")
assert(tostring(small):find("matmul", 1, true), "print(plan) names each op")
assert(small:blocks():find("rank 0:", 1, true), "plan:blocks() lists every rank's program")
-- One line per op on any mesh: a 4-op graph on 1,024 ranks prints in a few lines.
local wide = tp.plan(tp.relu(x:matmul(w) + 1), {mesh = 1024})
local lines = select(2, tostring(wide):gsub("\n", "\n"))
assert(lines < 20, ("print(plan) on 1024 ranks: %d lines"):format(lines))
assert(select(2, wide:blocks():gsub("\n", "\n")) > 1024, "plan:blocks() lists all 1024 ranks")

-- 100 ops on 64 modelled ranks: searched and costed by estimate, lowered only when drawn.
local h = x
for i = 1, 50 do h = (h:matmul(w) + 1):tanh() end
local big = tp.plan(h, {mesh = 64})
local e = big:cost()
assert(e.estimated == true, "a 100-op plan on 64 ranks is estimated")
assert(e.time > 0 and e.flops > 0, "estimated cost fields")
local text = tostring(big)
assert(text:find("chosen by estimate", 1, true), "print(plan) says the plan is estimated")
assert(not text:find("rank 0:", 1, true), "an estimated plan is not listed block by block")
local path = os.tmpname()
big:dot(path)  -- lowers it
local f = assert(io.open(path))
local dot = f:read("a")
f:close()
os.remove(path)
assert(dot:find("subgraph cluster_63", 1, true), "the dot file has every rank")

-- exact_limit = 0 searches by estimate even on a small mesh; plan:cost{exact = true} lowers the
-- winner and simulates it, which an exact plan's cost already is.
local y = x:matmul(w):relu()
local forced = tp.plan(y, {mesh = 4, search = {exact_limit = 0}})
assert(forced:cost().estimated == true, "exact_limit = 0 estimates")
local sim = forced:cost{exact = true}
assert(sim.estimated == false and sim.time > 0, "plan:cost{exact = true} simulates")
assert(math.abs(sim.flops - forced:cost().flops) <= 1e-6 * sim.flops, "the same flops either way")
assert(small:cost{exact = true}.time == c.time, "an exact plan's exact cost is its cost")
assert(tp.plan(y, {mesh = 4, search = {exact_limit = 1 << 20}}):cost().estimated == false)

-- Observing the same expression runs it (the plan on the current mesh).
assert(math.abs(h:sum():item()) >= 0)

-- Bad options name the function and the option.
local ok, err = pcall(tp.plan, h, {mesh = 0})
assert(not ok and err:find("tp.plan", 1, true) and err:find("mesh", 1, true), err)
ok, err = pcall(tp.plan, h, {mesh = "big"})
assert(not ok and err:find("mesh", 1, true), err)
ok, err = pcall(tp.plan, h, {meshes = 4})
assert(not ok and err:find("meshes", 1, true), err)
ok, err = pcall(tp.plan, h, {mesh = 4, search = {exact_limit = -1}})
assert(not ok and err:find("tp.plan", 1, true) and err:find("exact_limit", 1, true), err)
ok, err = pcall(small.cost, small, {exactly = true})
assert(not ok and err:find("exactly", 1, true), err)
print("ok")
