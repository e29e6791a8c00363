-- Packed storage and the ops that exploit declared properties (docs/properties.md): a declared
-- named tensor is kept as its stored tiles (P) and reads back unpacked; maps, full reductions
-- and contractions run on the stored tiles; every result equals the same op on x:dense().
-- Runs on 1 rank, 3 virtual ranks (plans verified), a simulated device and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, near, err, truthy = check.test, check.eq, check.near, check.check_error, check.truthy

local function maxdiff(x, y) return (x - y):abs():max():item() end
-- near(maxdiff(x, y), 0, tol) for every {x, y, tol, label}, in one observation (one plan).
local function all_near(cases)
  local ds = {}
  for i, c in ipairs(cases) do ds[i] = (c[1] - c[2]):abs():max() end
  tp.eval(table.unpack(ds))
  for i, c in ipairs(cases) do near(ds[i]:item(), 0, c[3], c[4]) end
end
local function f64(shape, seed) return tp.randn(shape, {dtype = "f64", seed = seed}) end
local function held(name)  -- what tp.tensors() says the environment holds for a name
  for _, t in ipairs(tp.tensors()) do if t.name == name then return t end end
end
-- A tensor antisymmetric in (1,2) and in (3,4), declared (checked when evaluated).
local function anti4(n, seed, dtype)
  local a = tp.randn({n, n, n, n}, {seed = seed, dtype = dtype})
  a = a - a:permute{2, 1, 3, 4}
  a = a - a:permute{1, 2, 4, 3}
  return a:declare{symmetry = {tp.antisymmetric{1, 2}, tp.antisymmetric{3, 4}}}
end
local function block_diagonal(n, t, seed)
  local g = n // t
  local pat = tp.eye(g):reshape{g, 1, g, 1}:expand{g, t, g, t}:reshape{n, n}
  return tp.randn({n, n}, {seed = seed}) * pat, tp.eye(g, {dtype = "bool"})
end

test("issue 25: block-diagonal 512^2 in 64^2 tiles", function()
  local x, mask = block_diagonal(512, 64, 1)
  local y = tp.randn({512, 512}, {seed = 2})
  tp.env.bd = x:declare{tiles = {64, 64}, nonzero = mask}
  local s = tp.env.bd
  eq(held("bd").bytes, 8 * 64 * 64 * 4, "the environment holds the 8 nonzero tiles")
  eq(held("bd").shape, {512, 512})
  eq(held("bd").packed, true)
  truthy(held("bd").bytes <= 0.2 * 512 * 512 * 4)
  eq(s:nbytes(), 8 * 64 * 64 * 4)
  for _, mesh in ipairs{1, 3} do
    local fs = tp.plan(s:matmul(y), {mesh = mesh}):cost().flops
    local fd = tp.plan(x:matmul(y), {mesh = mesh}):cost().flops
    truthy(fs <= 0.2 * fd, "mesh " .. mesh .. ": planned flops " .. fs .. " vs dense " .. fd)
  end
  near(maxdiff(s:matmul(y), x:matmul(y)), 0, 1e-4)
  near(maxdiff(y:matmul(s), y:matmul(x)), 0, 1e-4, "a sparse right operand")
  near(maxdiff(s, x), 0, 0)
  tp.env.bd = nil
end)

test("issue 25: a symmetric 256^2 tensor", function()
  local s = tp.randn({256, 256}, {symmetry = tp.symmetric{1, 2}, seed = 3})
  tp.env.sym = s
  eq(held("sym").bytes, 136 * 16 * 16 * 4, "136 of 256 tiles of 16^2")
  truthy(held("sym").bytes <= 0.55 * 256 * 256 * 4)
  eq(tp.env.sym:nbytes(), held("sym").bytes)
  eq(tp.env.sym:properties().symmetry[1].kind, "symmetric")
  near(maxdiff(tp.env.sym, s:dense()), 0, 0)
  tp.env.sym = nil
end)

test("issue 25: abij,ijcd->abcd with antisymmetric pairs plans at most half the dense flops", function()
  local a, b = anti4(8, 1), anti4(8, 2)
  local c = tp.einsum("abij,ijcd->abcd", a, b)
  local cd = tp.einsum("abij,ijcd->abcd", a:dense(), b:dense())
  for _, mesh in ipairs{1, 3} do
    local fs = tp.plan(c, {mesh = mesh}):cost().flops
    local fd = tp.plan(cd, {mesh = mesh}):cost().flops
    truthy(fs <= 0.5 * fd, "mesh " .. mesh .. ": planned flops " .. fs .. " vs dense " .. fd)
  end
  near(maxdiff(c, cd), 0, 1e-3 * cd:abs():max():item())
  local groups = c:properties().symmetry
  eq({tostring(groups[1]), tostring(groups[2])}, {"antisymmetric{1,2}", "antisymmetric{3,4}"})
end)

test("contractions equal the dense ones", function()
  local a, b = anti4(5, 3, "f64"), anti4(5, 4, "f64")
  local ad, bd = a:dense(), b:dense()
  local cases = {}
  for _, spec in ipairs{"abij,ijcd->abcd", "abij,jicd->abcd", "abij,cdij->abcd", "abij,ijcd->bacd",
                        "abij,ijcd->cdab", "abij,ijcd->ab", "abij,abij->"} do
    cases[#cases + 1] = {tp.einsum(spec, a, b), tp.einsum(spec, ad, bd), 1e-12, spec}
  end
  cases[#cases + 1] = {tp.tensordot(a, b, 2), tp.tensordot(ad, bd, 2), 1e-12, "tensordot"}
  cases[#cases + 1] = {tp.einsum("abij,ijcd,cdef->abef", a, b, a), tp.einsum("abij,ijcd,cdef->abef", ad, bd, ad),
                       1e-10, "three operands"}
  -- symmetric, sizes with edge tiles padded (17 = 8 tiles of 2 + 1), one group of three dims
  local s = f64({17, 17}, 5)
  s = (s + s:t()):declare{symmetry = tp.symmetric{1, 2}}
  local t = f64({17, 17, 4}, 6)
  t = (t + t:permute{2, 1, 3}):declare{symmetry = tp.symmetric{1, 2}}
  cases[#cases + 1] = {tp.einsum("ij,ijk->k", s, t), tp.einsum("ij,ijk->k", s:dense(), t:dense()), 1e-10}
  cases[#cases + 1] = {tp.einsum("ij,jik->k", s, t), tp.einsum("ij,jik->k", s:dense(), t:dense()), 1e-10}
  local x = f64({4, 4, 4}, 7)
  local g = x + x:permute{2, 1, 3} + x:permute{1, 3, 2} + x:permute{3, 2, 1} + x:permute{2, 3, 1} + x:permute{3, 1, 2}
  g = g:declare{symmetry = tp.symmetric{1, 2, 3}}
  local m = f64({4, 2}, 8)
  cases[#cases + 1] = {tp.einsum("ijk,jki->", g, g), tp.einsum("ijk,jki->", g:dense(), g:dense()), 1e-9}
  cases[#cases + 1] = {tp.einsum("ijk,kl->ijl", g, m), tp.einsum("ijk,kl->ijl", g:dense(), m), 1e-10}
  all_near(cases)
end)

test("block-sparse contractions: either operand or both", function()
  local m = tp.tensor{{true, false, true}, {false, false, false}, {false, true, true}}
  local cover = m:cast("f64"):reshape{3, 1, 3, 1}:expand{3, 4, 3, 3}:reshape{12, 9}[{{1, 10}, {1, 7}}]
  local x = f64({10, 7}, 9) * cover
  local a = x:declare{tiles = {4, 3}, nonzero = m}
  local b = f64({5, 10}, 10)
  near(maxdiff(b:matmul(a), b:matmul(x)), 0, 1e-12)
  near(maxdiff(a:matmul(a:t()), x:matmul(x:t())), 0, 1e-12)
  eq(a:matmul(a:t()):properties().nonzero:totable(), {{true, false, true}, {false, false, false}, {true, false, true}})
  near(maxdiff(tp.einsum("ij,kj->ik", a, a), tp.einsum("ij,kj->ik", x, x)), 0, 1e-12)
  near(maxdiff(tp.tensordot(a, f64({7, 3}, 11), 1), tp.tensordot(x, f64({7, 3}, 11), 1)), 0, 1e-12)
  tp.env.sp = a
  eq(held("sp").bytes, 4 * 4 * 3 * 8)
  near(maxdiff(tp.env.sp:matmul(tp.env.sp:t()), x:matmul(x:t())), 0, 1e-12)
  tp.env.sp = nil
end)

test("named tensors are kept packed and read back dense", function()
  local a = tp.randn({9, 9, 4}, {dtype = "f64", seed = 12})
  a = (a - a:permute{2, 1, 3}):declare{symmetry = tp.antisymmetric{1, 2}}
  tp.env.a = a
  eq(held("a").shape, {9, 9, 4})
  eq(held("a").bytes, 36 * 4 * 8, "tiles of one element, strictly i < j: C(9,2)")
  near(tp.env.a:totable(), a:dense():totable(), 0)
  near(tp.env.a[{{2, 5}, 3, {}}]:totable(), a:dense()[{{2, 5}, 3, {}}]:totable(), 0)
  eq(tostring(tp.env.a[{1, {1, 3}, 1}]), tostring(a:dense()[{1, {1, 3}, 1}]))
  local names = {}
  for name, x in pairs(tp.env) do names[name] = x.shape end
  eq(names.a, {9, 9, 4}, "pairs(tp.env) reads back dense")
  -- a region write makes it a plain (dense) tensor
  tp.env.a[{1, 2, {}}] = 5
  eq(tp.env.a[{1, 2, 1}]:item(), 5)
  eq(held("a").packed, false)
  tp.env.a = nil
  -- creators with a name keep the packed form
  local r = tp.randn({20, 20}, {symmetry = tp.symmetric{1, 2}, seed = 13, name = "r"})
  eq(held("r").packed, true)
  near(maxdiff(tp.env.r, r), 0, 0)
  tp.env.r = nil
end)

test("maps and reductions of a packed tensor", function()
  local s = tp.randn({17, 17}, {dtype = "f64", symmetry = tp.symmetric{1, 2}, seed = 14})
  local a = tp.randn({10, 10}, {dtype = "f64", symmetry = tp.antisymmetric{1, 2}, seed = 15})
  tp.env.s, tp.env.a = s, a
  local rs, ra, sd, ad = tp.env.s, tp.env.a, s:dense(), a:dense()
  local packed = rs:nbytes()
  local cases = {}
  for _, f in ipairs{"exp", "neg", "tanh", "square"} do
    cases[#cases + 1] = {rs[f](rs), sd[f](sd), 1e-12, f}
    eq(rs[f](rs):nbytes(), packed, f)
  end
  cases[#cases + 1] = {rs * 2 + 1, sd * 2 + 1, 1e-12}
  cases[#cases + 1] = {rs + rs * rs, sd + sd * sd, 1e-12}
  cases[#cases + 1] = {ra:square(), ad:square(), 1e-12}
  cases[#cases + 1] = {-ra + ra * 3, ad * 2, 1e-12}
  all_near(cases)
  eq(tostring(ra:square():properties().symmetry[1]), "symmetric{1,2}")
  -- 1/0 = inf and 0 * inf = NaN on the (unstored) zero diagonal: not antisymmetric, read dense
  eq(#ra:reciprocal():properties().symmetry, 0)
  eq(#(ra * math.huge):properties().symmetry, 0)
  eq(#(ra / 0):properties().symmetry, 0)
  eq(tostring((ra / 2):properties().symmetry[1]), "antisymmetric{1,2}")
  eq(ra:reciprocal():diag():totable(), ad:reciprocal():diag():totable())
  local x, mask = block_diagonal(64, 16, 16)
  tp.env.b = x:declare{tiles = {16, 16}, nonzero = mask}
  local rb = tp.env.b
  local r = {rs:sum(), sd:sum(), rs:mean(), sd:mean(), rs:max(), sd:max(), rs:min(), sd:min(), ra:sum(),
             rb:sum(), x:sum(), rb:max(), x:max(), rb:min(), x:min()}
  tp.eval(table.unpack(r))
  near(r[1]:item(), r[2]:item(), 1e-10)
  near(r[3]:item(), r[4]:item(), 1e-12)
  eq(r[5]:item(), r[6]:item())
  eq(r[7]:item(), r[8]:item())
  near(r[9]:item(), 0, 1e-10)
  near(r[10]:item(), r[11]:item(), 1e-3)
  eq(r[12]:item(), r[13]:item())
  eq(r[14]:item(), r[15]:item())
  all_near{{rs:sum(1), sd:sum(1), 1e-10, "partial reductions read the dense values"},
           {rb:relu() * 2, x:relu() * 2, 0}}
  eq((rb:relu() * 2):nbytes(), 4 * 16 * 16 * 4)
  tp.env.s, tp.env.a, tp.env.b = nil, nil, nil
end)

test("casts of a packed antisymmetric tensor: only where negation commutes with them", function()
  -- Integers wrap: -x of a u8 is 256 - x, and 64 * (a - a^T) in i8 holds -128 mirrored by -128
  -- (antisymmetric in their own arithmetic only, so declared with trust: the check adds in a
  -- wider type). Floats to integers saturate: +-857.5 become 127 and -128 in i8. A packed
  -- tensor's cast or comparison must equal the dense one's (a u8 compared with 1.5 once
  -- mirrored 7 as -7: the differential fuzzer, seed 36).
  local a = tp.arange(0, 63):reshape{8, 8}
  local anti = {symmetry = tp.antisymmetric{1, 2}, trust = true}
  tp.env.anti_u8 = (a:cast("u8") - a:t():cast("u8")):declare(anti)
  tp.env.anti_i8 = ((a - a:t()) * 64):cast("i8"):declare(anti)
  tp.env.anti_f32 = ((a - a:t()) * 17.5):declare{symmetry = tp.antisymmetric{1, 2}}
  for _, name in ipairs{"anti_u8", "anti_i8", "anti_f32"} do
    truthy(held(name).packed, name .. " is kept packed")
    local x = tp.env[name]
    local d = x:dense()
    for _, to in ipairs{"u8", "i8", "i32", "i64", "f32", "f64", "bool"} do
      eq(x:cast(to):totable(), d:cast(to):totable(), name .. " as " .. to)
    end
    eq(tp.le(x, 1.5):totable(), tp.le(d, 1.5):totable(), name .. " <= 1.5")
    eq((x / 2):totable(), (d / 2):totable(), name .. " / 2")
  end
  eq(tp.env.anti_i8[{1, 3}]:item(), -128)
  eq(tp.env.anti_i8[{3, 1}]:item(), -128)
  tp.env.anti_u8, tp.env.anti_i8, tp.env.anti_f32 = nil, nil, nil
end)

test("gradients: the projection onto the declared structure", function()
  local s = tp.randn({12, 12}, {dtype = "f64", symmetry = tp.symmetric{1, 2}, seed = 17})
  tp.env.s = s
  local w = f64({12, 3}, 18)
  local g = tp.grad((tp.env.s:matmul(w):square()):sum(), {tp.env.s})[1]
  local gd = tp.grad((s:dense():matmul(w):square()):sum(), {s:dense()})[1]
  near(maxdiff(g, (gd + gd:t()) / 2), 0, 1e-12)
  eq(tostring(g:properties().symmetry[1]), "symmetric{1,2}")
  local gw = tp.grad((tp.env.s:matmul(w):square()):sum(), {w})[1]
  near(maxdiff(gw, tp.grad((s:dense():matmul(w):square()):sum(), {w})[1]), 0, 1e-12)
  -- through the antisymmetric contraction, w.r.t. a dense operand and the declared one
  local a, b = anti4(4, 19, "f64"), anti4(4, 20, "f64")
  local v = f64({4, 4, 4, 4}, 21)
  local gv = tp.grad((tp.einsum("abij,ijcd->abcd", a, v) ^ 2):sum(), {v})[1]
  near(maxdiff(gv, tp.grad((tp.einsum("abij,ijcd->abcd", a:dense(), v) ^ 2):sum(), {v})[1]), 0, 1e-10)
  local ga = tp.grad((tp.einsum("abij,ijcd->abcd", a, b) * v):sum(), {a})[1]
  local G = tp.einsum("abcd,ijcd->abij", v, b:dense())
  G = (G - G:permute{2, 1, 3, 4}) / 2
  G = (G - G:permute{1, 2, 4, 3}) / 2
  near(maxdiff(ga, G), 0, 1e-10)
  -- block-sparse: zero outside the nonzero tiles
  local x, mask = block_diagonal(32, 8, 22)
  tp.env.b = x:declare{tiles = {8, 8}, nonzero = mask}
  local y = tp.randn({32, 32}, {seed = 23})
  local gb = tp.grad(tp.env.b:matmul(y):sum(), {tp.env.b})[1]
  local pat = tp.eye(4):reshape{4, 1, 4, 1}:expand{4, 8, 4, 8}:reshape{32, 32}
  near(maxdiff(gb, tp.grad(x:matmul(y):sum(), {x})[1] * pat), 0, 1e-5)
  tp.env.s, tp.env.b = nil, nil
end)

-- The tile products of one plan, per rank: {tiles = batch entries, work = multiply-adds,
-- whole = every product covers its tiles whole}, from plan:blocks()'s batched matmuls.
local function tile_work(plan, t)
  local per, rank = {}, nil
  for line in plan:blocks():gmatch("[^\n]+") do
    rank = tonumber(line:match("^rank (%d+):")) or rank
    local r = line:match("matmul (%[[%d%.x%[%]]+)")
    if r then
      local ext = {}
      for lo, hi in r:gmatch("%[(%d+)%.%.(%d+)%]") do ext[#ext + 1] = hi - lo + 1 end
      local w = per[rank] or {tiles = 0, work = 0, whole = true}
      w.tiles = w.tiles + ext[1]
      w.work = w.work + ext[1] * ext[2] * ext[3] * ext[4]
      w.whole = w.whole and #ext == 4 and ext[2] == t and ext[4] == t
      per[rank] = w
    end
  end
  return per
end

test("a block-diagonal matmul on 4 ranks: every rank a quarter of the tiles, whole", function()
  local x, mask = block_diagonal(256, 32, 24)
  local y = tp.randn({256, 256}, {seed = 25})
  tp.env.s = x:declare{tiles = {32, 32}, nonzero = mask, trust = true}
  local _ = tp.env.s:sum():item()  -- computed: P {8, 32, 32} is what the environment holds
  local fd = tp.plan(x:matmul(y), {mesh = 4}):cost().flops
  for _, s in ipairs{tp.env.s, x:declare{tiles = {32, 32}, nonzero = mask, trust = true}} do
    local plan = tp.plan(s:matmul(y), {mesh = 4})
    local per = tile_work(plan, 32)
    for r = 0, 3 do
      truthy(per[r], "rank " .. r .. " multiplies tiles")
      eq(per[r].tiles, 2, "rank " .. r .. ": two of the eight tile products")
      eq(per[r].work, 2 * 32 * 32 * 256, "rank " .. r)
      truthy(per[r].whole, "rank " .. r .. " multiplies whole tiles")
    end
    truthy(plan:cost().flops <= 0.2 * fd, "planned flops " .. plan:cost().flops .. " vs dense " .. fd)
    near(maxdiff(s:matmul(y), x:matmul(y)), 0, 1e-4)
  end
  -- block-sparse times block-sparse: the result's P is the batched product, split alike
  local s2 = tp.env.s:matmul(tp.env.s)
  eq(s2:properties().tiles, {32, 32})
  local per = tile_work(tp.plan(s2, {mesh = 4}), 32)
  for r = 0, 3 do eq(per[r].tiles, 2, "rank " .. r) end
  near(maxdiff(s2, x:matmul(x)), 0, 1e-4)
  tp.env.s = nil
end)

test("save_env and load_env keep the declarations, and the tensors packed", function()
  local dir = os.tmpname()
  os.remove(dir)
  local s = tp.randn({17, 17}, {dtype = "f64", symmetry = tp.symmetric{1, 2}, seed = 26})
  local a = anti4(6, 27, "f64")
  local x, mask = block_diagonal(32, 8, 28)
  tp.env.ps, tp.env.pa, tp.env.pb = s, a, x:declare{tiles = {8, 8}, nonzero = mask}
  tp.env.plain = f64({3, 4}, 29)
  local bytes = {}
  for _, n in ipairs{"ps", "pa", "pb"} do bytes[n] = held(n).bytes end
  tp.save_env(dir)
  tp.env.ps, tp.env.pa, tp.env.pb, tp.env.plain = nil, nil, nil, nil
  tp.load_env(dir)
  eq(tp.env.ps.shape, {17, 17})
  all_near{{tp.env.ps, s:dense(), 0}, {tp.env.pa, a:dense(), 0}, {tp.env.pb, x, 0}}
  eq(tostring(tp.env.ps:properties().symmetry[1]), "symmetric{1,2}")
  eq(#tp.env.pa:properties().symmetry, 2)
  eq(tostring(tp.env.pa:properties().symmetry[2]), "antisymmetric{3,4}")
  eq(tp.env.pb:properties().tiles, {8, 8})
  eq(tp.env.pb:properties().nonzero:totable(), mask:totable())
  eq(#tp.env.plain:properties().symmetry, 0)
  for _, n in ipairs{"ps", "pa", "pb"} do
    eq(held(n).packed, true, n .. " is kept packed again")
    eq(held(n).bytes, bytes[n], n)
  end
  -- the file holds the dense values (numpy reads it), the manifest the declaration
  local f = io.open(dir .. "/manifest.json")
  local manifest = f:read("a")
  f:close()
  truthy(manifest:find('"kind": "antisymmetric"', 1, true), manifest)
  truthy(manifest:find('"tiles": [', 1, true), manifest)
  -- a declaration that does not fit the file's shape is refused, naming the tensor
  local edited = manifest:gsub('"dims": %[\n? *1,\n? *2\n? *%]', '"dims": [1, 3]', 1)
  f = io.open(dir .. "/manifest.json", "w")
  f:write(edited)
  f:close()
  err(function() return tp.load_env(dir) end, "manifest.json", "the properties of", "do not fit")
  tp.env.ps, tp.env.pa, tp.env.pb, tp.env.plain = nil, nil, nil, nil
  os.execute("rm -rf '" .. dir .. "'")
end)

test("wrong declarations are refused", function()
  local x = f64({6, 6}, 27)
  err(function() return tp.einsum("ij,jk->ik", x:declare{symmetry = tp.symmetric{1, 2}}, x):totable() end,
      "tp.declare: x is not symmetric in dims 1,2")
  tp.env.bad = x:declare{symmetry = tp.antisymmetric{1, 2}}
  err(function() return tp.env.bad:sum():item() end, "not antisymmetric in dims 1,2")
  eq(tp.env.bad, nil, "a failed check binds nothing")
  -- An antisymmetric diagonal must be 0: a NaN there is not kept by the packed form, so refused.
  local nan_diagonal = tp.tensor({{0 / 0, 2, 1}, {-2, 0, 3}, {-1, -3, 0}})
  err(function() return nan_diagonal:declare{symmetry = tp.antisymmetric{1, 2}}:totable() end,
      "not antisymmetric in dims 1,2 (max |x + x^T| = ")
  local nan_pair = tp.tensor({{0, 0 / 0, 1}, {0 / 0, 0, 3}, {-1, -3, 0}})
  truthy(nan_pair:declare{symmetry = tp.antisymmetric{1, 2}}:totable()[1][2] ~= 0, "a NaN pair is kept")
end)

check.summary()
