-- tp.explain: one line per rejected alternative, with what it would cost and what it lost on
-- (compute, communication or memory); inspection output at 1,024 ranks stays short.
local function explain(x, opts)
  local lines = {}
  local old = print
  print = function(s) lines[#lines + 1] = tostring(s) end  -- tp.explain prints its text
  local ok, err = pcall(tp.explain, x, opts)
  print = old
  assert(ok, err)
  return table.concat(lines, "\n")
end

-- Over the batch on 4 ranks: x lies split by rows, so every other split of the matmul moves x
-- and loses on communication; the chosen line gives its own compute and communication.
local x = tp.rand({4096, 1024}, {seed = 1}):constrain(tp.split(1))
local w = tp.rand({1024, 256}, {seed = 2})
local text = explain(x:matmul(w), {mesh = 4})
local block = text:match("matmul #%d+.-\n\n") or text:match("matmul #%d+.*")
assert(block:find("%* i/4: best plan with it [%d.e-]+ s   <%- chosen %(compute [%d.e-]+ s, communication"), block)
local rejected, comm = 0, 0
for line in block:gmatch("[^\n]+") do
  if line:find("^    %S") then
    rejected = rejected + 1
    assert(line:find(", lost on "), "every rejected alternative says what it lost on: " .. line)
    if line:find("^    k/4: .*lost on communication") then comm = comm + 1 end
  end
end
assert(rejected >= 10, "the alternatives are listed, one a line: " .. rejected)
assert(comm == 1, "k/4 moves x and loses on communication:\n" .. block)

-- Memory: on 4 ranks of 12 MB, the whole matmul on one rank (x, w and y: 21 MB) is over the
-- limit, and says so.
local text2 = explain(x:matmul(w), {mesh = {ranks = 4, memory = 12e6}})
local whole = text2:match("\n    whole on rank 0:[^\n]*")
assert(whole and whole:find("lost on memory") and whole:find("over the memory per rank"), text2)

-- 1,024 ranks: print(plan) of attention (batch 8, 16 heads, 512 positions) stays under 200
-- lines, and its explain lists the alternatives of each op.
local nn = require "tapestry.nn"
local q = tp.rand({8, 16, 512, 64}, {seed = 3})
local o = nn.attention(q, q + 1, q * 2)
local plan = tp.plan(o, {mesh = 1024})
local n = select(2, tostring(plan):gsub("\n", "\n"))
assert(n < 200, ("print(plan) of attention on 1024 ranks: %d lines"):format(n))
assert(explain(o, {mesh = 1024}):find("lost on "), "explain on 1024 ranks names what each alternative lost on")

-- 3-D splits on big meshes: batch x head x query rows is a layout a plan can be asked for.
local c = tp.plan(o:constrain(tp.grid{8, 16, 8, 1}), {mesh = 1024}):cost()
assert(c.time > 0 and c.estimated, "a 3-dim layout on 1024 ranks is planned")
print("ok")
