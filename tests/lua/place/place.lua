-- tp.place(x, {storage = "disk"}): a named tensor moved to disk reads back equal, is listed as on
-- disk, computes with tensors in memory, and its file goes once nothing refers to it. With
-- TAPESTRY_SPILL_FAULT=1 every write to the spill directory fails: the error names the tensor,
-- it stays in memory, and the environment goes on. The creators' option storage = "disk" makes
-- the same tensor as in memory, on disk, and on a full disk binds nothing. Run on 1 rank, 3
-- virtual ranks, mpirun -n 2.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local full = os.getenv("TAPESTRY_SPILL_FAULT") == "1"

local function row(name)
  for _, r in ipairs(tp.tensors()) do if r.name == name then return r end end
end

tp.env.w = tp.rand({200, 30}, {seed = 7})
local want = (tp.env.w * 2):totable()

if not full then
  check.test("place.named_tensor_to_disk", function()
    tp.env.w = tp.place(tp.env.w, {storage = "disk"})
    check.eq(row("w").storage, "disk")
    check.eq(row("w").layout, "on disk")
    check.eq((tp.env.w * 2):totable(), want)           -- read from the file
    check.eq((tp.env.w * 2 + 0):totable(), want)       -- again: read when needed, each time
  end)
  check.test("place.computes_with_memory", function()
    tp.env.v = tp.env.w:sum(1) + tp.ones({30})
    check.eq(row("v").storage, "memory")
    local s = (tp.env.w * 1):sum(1):totable()
    local got = (tp.env.v * 1):totable()
    for i = 1, 30 do check.near(got[i], s[i] + 1, 1e-4) end
  end)
  check.test("place.an_expression", function()
    local d = tp.place(tp.arange(1, 12):reshape({3, 4}), {storage = "disk"})
    check.eq(d:sum():item(), 78)
  end)
  local dir = (os.getenv("TAPESTRY_SPILL_DIR") or "/tmp") .. "/tapestry-" ..
    io.open("/proc/self/stat"):read("l"):match("^(%d+)") .. "/disk"
  local function files()
    local n = 0
    for _ in io.popen("ls " .. dir .. " 2>/dev/null"):lines() do n = n + 1 end
    return n
  end
  check.test("place.the_file_goes_with_the_tensor", function()
    collectgarbage(); collectgarbage()
    tp.eval(tp.zeros({1}))
    check.eq(files(), 1)                               -- w's
    tp.env.w = nil
    collectgarbage(); collectgarbage()
    tp.eval(tp.zeros({1}))
    check.eq(files(), 0)
  end)
  -- Each creator with storage = "disk" gives the values it gives in memory, read from its file.
  check.test("place.creators_on_disk", function()
    local base = tp.ones({40, 7}, {dtype = "f64"})
    local made = {
      {"zeros", function(o) return tp.zeros({40, 7}, o) end},
      {"ones", function(o) return tp.ones({40, 7}, o) end},
      {"full", function(o) return tp.full({40, 7}, 2.5, o) end},
      {"eye", function(o) return tp.eye(9, 11, o) end},
      {"arange", function(o) return tp.arange(1, 50, 2, o) end},
      {"linspace", function(o) return tp.linspace(0, 1, 33, o) end},
      {"logspace", function(o) return tp.logspace(0, 2, 5, o) end},
      {"rand", function(o) o.seed = 11; return tp.rand({40, 7}, o) end},
      {"randn", function(o) o.seed = 12; return tp.randn({40, 7}, o) end},
      {"randint", function(o) o.seed = 13; return tp.randint(-5, 5, {40, 7}, o) end},
      {"tensor", function(o) return tp.tensor({{1, 2}, {3, 4}}, o) end},
      {"zeros_like", function(o) return tp.zeros_like(base, o) end},
      {"full_like", function(o) return tp.full_like(base, 3, o) end},
      {"rand_like", function(o) o.seed = 14; return tp.rand_like(base, o) end},
    }
    for _, m in ipairs(made) do
      local name, make = m[1], m[2]
      tp.env["c_" .. name] = make({})
      make({name = "d_" .. name, storage = "disk"})
      check.eq(row("d_" .. name).storage, "disk", name)
      check.eq(row("d_" .. name).layout, "on disk", name)
      check.eq((tp.env["d_" .. name] + 0):totable(), (tp.env["c_" .. name] + 0):totable(), name)
      tp.env["c_" .. name], tp.env["d_" .. name] = nil, nil
    end
    -- storage = "memory" is the default, said explicitly.
    tp.zeros({3}, {name = "m", storage = "memory"})
    check.eq(row("m").storage, "memory")
    tp.env.m = nil
  end)
  check.test("place.an_unnamed_creator_has_a_file_while_it_lives", function()
    collectgarbage(); collectgarbage()
    tp.eval(tp.zeros({1}))
    local before = files()
    local r = tp.rand({64, 64}, {seed = 5, storage = "disk"})
    check.eq(files(), before + 1)
    check.near(r:sum():item(), tp.rand({64, 64}, {seed = 5}):sum():item(), 1e-2)
    r = nil
    collectgarbage(); collectgarbage()
    tp.eval(tp.zeros({1}))
    check.eq(files(), before)
  end)
else
  check.test("place.disk_full_creator_binds_nothing", function()
    local ok, err = pcall(tp.zeros, {200, 30}, {name = "w", storage = "disk"})
    check.truthy(not ok, "the creator succeeded on a full disk")
    check.truthy(tostring(err):find("tp.zeros: cannot put tp.env.w on disk", 1, true), tostring(err))
    check.truthy(tostring(err):find("No space left on device", 1, true), tostring(err))
    check.truthy(tostring(err):find("nothing was made, and tp.env.w is as it was", 1, true), tostring(err))
    check.eq(row("w").storage, "memory")
    check.eq((tp.env.w * 2):totable(), want)           -- w as it was
    ok, err = pcall(tp.rand, {5}, {storage = "disk"})
    check.truthy(not ok and tostring(err):find("cannot put the new f32 {5} tensor on disk", 1, true), tostring(err))
  end)
  check.test("place.disk_full_names_the_tensor", function()
    local ok, err = pcall(tp.place, tp.env.w, {storage = "disk"})
    check.truthy(not ok, "the placement succeeded on a full disk")
    check.truthy(tostring(err):find("cannot put tp.env.w on disk", 1, true), tostring(err))
    check.truthy(tostring(err):find("No space left on device", 1, true), tostring(err))
    check.eq(row("w").storage, "memory")
    check.eq((tp.env.w * 2):totable(), want)           -- still there, in memory
    tp.env.z = tp.env.w + 1                            -- and the environment goes on
    check.near((tp.env.z * 1):sum():item(), (tp.env.w * 1):sum():item() + 6000, 1e-2)
  end)
end
check.mistake("place_bad_storage", function() tp.place(tp.ones({2}), {storage = "tape"}) end,
  "tp.place", "storage must be \"disk\"")
check.mistake("place_no_storage", function() tp.place(tp.ones({2})) end, "tp.place", "storage")
check.mistake("creator_bad_storage", function() tp.zeros({2}, {storage = "tape"}) end,
  "tp.zeros", "storage must be \"memory\" or \"disk\"")
check.mistake("creator_storage_not_a_string", function() tp.rand({2}, {storage = 1}) end,
  "tp.rand", "storage")
check.mistake("creator_disk_declared", function()
  tp.ones({2, 2}, {storage = "disk", symmetry = tp.symmetric{1, 2}})
end, "tp.ones", "cannot be combined with symmetry")
check.mistake("logspace_bad_storage", function() tp.logspace(0, 1, 3, {storage = "ram"}) end,
  "tp.logspace", "storage must be")
check.summary()
