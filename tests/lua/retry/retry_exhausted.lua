-- A block that fails transiently more times than it may be retried fails the observation with
-- every attempt's error (run with TAPESTRY_BLOCK_FAULT=1:9 TAPESTRY_BLOCK_RETRIES=2: 3 attempts,
-- all failing); the session goes on and tp.env keeps its previous value.
tp.env.a = tp.full({8}, 2)
local ok, err = pcall(function() return (tp.env.a * 3):sum():item() end)
assert(not ok, "every block fails, yet the observation succeeded")
err = tostring(err)
print(err)
for a = 1, 3 do assert(err:find("attempt " .. a .. ": injected transient failure", 1, true), err) end
assert(not err:find("attempt 4", 1, true), "more attempts than TAPESTRY_BLOCK_RETRIES allows: " .. err)
assert(err:find("failed 3 time(s), every attempt transiently", 1, true), err)
print("ok")
