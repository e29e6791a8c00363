-- tp.place(x, {storage = "disk"}): a named tensor moved to disk reads back equal, is listed as on
-- disk, computes with tensors in memory, and its file goes once nothing refers to it. With
-- TAPESTRY_SPILL_FAULT=1 every write to the spill directory fails: the error names the tensor,
-- it stays in memory, and the environment goes on. Run on 1 rank, 3 virtual ranks, mpirun -n 2.
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
  check.test("place.the_file_goes_with_the_tensor", function()
    local dir = (os.getenv("TAPESTRY_SPILL_DIR") or "/tmp") .. "/tapestry-" ..
      io.open("/proc/self/stat"):read("l"):match("^(%d+)") .. "/disk"
    local function files()
      local n = 0
      for _ in io.popen("ls " .. dir .. " 2>/dev/null"):lines() do n = n + 1 end
      return n
    end
    collectgarbage(); collectgarbage()
    tp.eval(tp.zeros({1}))
    check.eq(files(), 1)                               -- w's
    tp.env.w = nil
    collectgarbage(); collectgarbage()
    tp.eval(tp.zeros({1}))
    check.eq(files(), 0)
  end)
else
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
check.summary()
