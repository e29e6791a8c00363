-- tp.mesh(): the rates the running mesh is costed with, and where they come from.
--   tapestry mesh_rates.lua measured CACHE_FILE [link]   -- after tapestry --calibrate wrote CACHE_FILE
--   TAPESTRY_RATES=builtin tapestry mesh_rates.lua builtin
local want, cache, link = arg[1], arg[2], arg[3]
local m = tp.mesh()
local function check(ok, what) if not ok then error(what, 2) end end
check(m.flops_per_rank > 0 and m.memory_bytes_per_s > 0 and m.link_bandwidth > 0 and m.link_latency >= 0,
      "rates must be positive")
if want == "builtin" then
  check(m.rates == "built-in" and m.link_rates == "built-in", "rates: " .. m.rates)
  check(m.flops_per_rank == 100e9 and m.memory_bytes_per_s == 11e9, "not the documented defaults")
  check(m.link_bandwidth == 5e9 and m.link_latency == 0.5e-6, "not the documented link")
  check(m.measured_at == nil, "built-in rates were not measured")
else
  check(m.rates == "measured", "rates: " .. m.rates)
  check(type(m.measured_at) == "string" and m.measured_at:match("^%d+%-%d+%-%d+T"), "no measured_at")
  -- The cache's numbers, as --calibrate wrote them: this run read them, it did not measure.
  local all = assert(io.open(cache)):read("a")
  local at = assert(all:find('"' .. m.machine .. '"', 1, true), "this machine has no entry in the cache")
  local text = all:sub(at, (all:find("}", at, true)))
  local flops = tonumber(text:match('"flops_per_s": ([%d%.eE+-]+)'))
  local mem = tonumber(text:match('"mem_bytes_per_s": ([%d%.eE+-]+)'))
  check(math.abs(m.flops_per_rank - flops) <= 1e-9 * flops, "flops differ from the cache")
  check(math.abs(m.memory_bytes_per_s - mem) <= 1e-9 * mem, "memory rate differs from the cache")
  check(text:find(m.measured_at, 1, true), "measured_at differs from the cache")
  check(m.link_rates == (link and "measured" or "built-in"), "link_rates: " .. m.link_rates)
end
-- Modelled meshes keep the documented defaults whatever runs here: plans stay reproducible.
local g = tp.mesh{nodes = 2, gpus = 4}
check(g.flops_per_rank == 100e9, "a modelled mesh took the measured rates")
local y = tp.rand({64, 64}, {seed = 1}):matmul(tp.rand({64, 64}, {seed = 2}))
local a, b = tp.plan(y, {mesh = 16}):cost(), tp.plan(y, {mesh = 16}):cost()
check(a.time == b.time, "a modelled plan's time changed")
print("rates", m.rates, m.link_rates, m.ranks)
