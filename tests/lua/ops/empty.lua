-- Empty tensors (a size-0 dim) against numpy: creation, maps, reductions with numpy's
-- identities, matmul with an empty inner or outer dim, cat, slices that select nothing,
-- reshape, masks, sorts and scans, structure, linear algebra, printing, .npy, tp.env and
-- gradients. The expected values are numpy's for the same expressions (printed by
-- tests/lua/ops/empty_numpy.py). Runs on 1 rank, 3 virtual ranks and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq = check.test, check.eq

-- numpy 1.24.2; Z = zeros((0,3)), A = arange(1,13).reshape(3,4), float64
local np = {
  zeros = {shape = {0, 3}, dtype = "f64", value = {}},
  arange_none = {shape = {0}, dtype = "f64", value = {}},
  arange_down = {shape = {0}, dtype = "i64", value = {}},
  linspace0 = {shape = {0}, dtype = "f64", value = {}},
  tensor_empty = {shape = {0}, dtype = "f64", value = {}},
  tensor_2x0 = {shape = {2, 0}, dtype = "f64", value = {{}, {}}},
  add = {shape = {0, 3}, dtype = "f64", value = {}},
  sum = {shape = {}, dtype = "f64", value = 0.0},
  sum0 = {shape = {3}, dtype = "f64", value = {0.0, 0.0, 0.0}},
  sum1 = {shape = {0}, dtype = "f64", value = {}},
  sum0_keep = {shape = {1, 3}, dtype = "f64", value = {{0.0, 0.0, 0.0}}},
  prod0 = {shape = {3}, dtype = "f64", value = {1.0, 1.0, 1.0}},
  max1 = {shape = {0}, dtype = "f64", value = {}},
  isum0 = {shape = {3}, dtype = "i64", value = {0, 0, 0}},
  mean = {shape = {}, dtype = "f64", value = 0/0},
  mean0 = {shape = {3}, dtype = "f64", value = {0/0, 0/0, 0/0}},
  var0 = {shape = {3}, dtype = "f64", value = {0/0, 0/0, 0/0}},
  std0 = {shape = {3}, dtype = "f64", value = {0/0, 0/0, 0/0}},
  all = {shape = {}, dtype = "bool", value = true},
  any = {shape = {}, dtype = "bool", value = false},
  norm = {shape = {}, dtype = "f64", value = 0.0},
  mm_k0 = {shape = {3, 4}, dtype = "f64", value = {{0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0}}},
  mm_n0 = {shape = {0, 4}, dtype = "f64", value = {}},
  dot0 = {shape = {}, dtype = "f64", value = 0.0},
  bmm_k0 = {shape = {2, 3, 2}, dtype = "f64", value = {{{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}}, {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}}}},
  einsum = {shape = {2, 3}, dtype = "f64", value = {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}},
  cat = {shape = {3, 4}, dtype = "f64", value = {{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0}, {9.0, 10.0, 11.0, 12.0}}},
  cat_all = {shape = {0, 3}, dtype = "f64", value = {}},
  cat1 = {shape = {0, 5}, dtype = "f64", value = {}},
  stack = {shape = {2, 0}, dtype = "f64", value = {{}, {}}},
  slice_none = {shape = {0, 4}, dtype = "f64", value = {}},
  slice_end = {shape = {3, 0}, dtype = "f64", value = {{}, {}, {}}},
  slice_back = {shape = {0, 4}, dtype = "f64", value = {}},
  reshape = {shape = {3, 0, 2}, dtype = "f64", value = {{}, {}, {}}},
  reshape_infer = {shape = {0, 3}, dtype = "f64", value = {}},
  transpose = {shape = {3, 0}, dtype = "f64", value = {{}, {}, {}}},
  mask = {shape = {0}, dtype = "f64", value = {}},
  mask_rows = {shape = {0, 4}, dtype = "f64", value = {}},
  where_idx = {shape = {0}, dtype = "i64", value = {}},
  sort = {shape = {0}, dtype = "f64", value = {}},
  argsort = {shape = {2, 0}, dtype = "i64", value = {{}, {}}},
  cumsum = {shape = {0, 3}, dtype = "f64", value = {}},
  searchsorted = {shape = {2}, dtype = "i64", value = {1, 1}},
  unique = {shape = {0}, dtype = "f64", value = {}},
  diagonal_past = {shape = {0}, dtype = "f64", value = {}},
  trace00 = {shape = {}, dtype = "f64", value = 0.0},
  tril = {shape = {0, 3}, dtype = "f64", value = {}},
  flip = {shape = {0, 3}, dtype = "f64", value = {}},
  det00 = {shape = {}, dtype = "f64", value = 1.0},
  det_batch = {shape = {2}, dtype = "f64", value = {1.0, 1.0}},
  slogdet_sign = {shape = {}, dtype = "f64", value = 1.0},
  slogdet_log = {shape = {}, dtype = "f64", value = 0.0},
  inv00 = {shape = {0, 0}, dtype = "f64", value = {}},
  solve = {shape = {2, 0}, dtype = "f64", value = {{}, {}}},
  qr_q = {shape = {3, 3}, dtype = "f64", value = {{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}}},
  qr_r = {shape = {3, 0}, dtype = "f64", value = {{}, {}, {}}},
  svd_u = {shape = {2, 2}, dtype = "f64", value = {{1.0, 0.0}, {0.0, 1.0}}},
  svd_s = {shape = {0}, dtype = "f64", value = {}},
  svd_vh = {shape = {0, 0}, dtype = "f64", value = {}},
  pad = {shape = {2, 2}, dtype = "f64", value = {{5.0, 5.0}, {5.0, 5.0}}},
  roll = {shape = {0}, dtype = "f64", value = {}},
  minimum = {shape = {0, 3}, dtype = "f64", value = {}},
  write_none = {shape = {3, 4}, dtype = "f64", value = {{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0}, {9.0, 10.0, 11.0, 12.0}}},
}

local f64 = {dtype = "f64"}
local Z = tp.zeros({0, 3}, f64)
local A = tp.arange(1, 12, 1, f64):reshape(3, 4)
local i64 = function(t) return tp.tensor(t, {dtype = "i64"}) end

-- Each expression, named as in empty_numpy.py.
local tp_of = {
  zeros = function() return tp.zeros({0, 3}, f64) end,
  arange_none = function() return tp.arange(1, 0, 1, f64) end,
  arange_down = function() return tp.arange(5, 6, -1, {dtype = "i64"}) end,
  linspace0 = function() return tp.linspace(0, 1, 0, f64) end,
  tensor_empty = function() return tp.tensor({}, f64) end,
  tensor_2x0 = function() return tp.tensor({{}, {}}, f64) end,
  add = function() return Z + 1 end,
  sum = function() return Z:sum() end,
  sum0 = function() return Z:sum(1) end,
  sum1 = function() return Z:sum(2) end,
  sum0_keep = function() return Z:sum(1, {keepdim = true}) end,
  prod0 = function() return Z:prod(1) end,
  max1 = function() return Z:max(2) end,
  isum0 = function() return tp.zeros({0, 3}, {dtype = "i32"}):sum(1) end,
  mean = function() return Z:mean() end,
  mean0 = function() return Z:mean(1) end,
  var0 = function() return Z:var(1) end,
  std0 = function() return Z:std(1) end,
  all = function() return Z:all() end,
  any = function() return Z:any() end,
  norm = function() return Z:norm() end,
  mm_k0 = function() return tp.matmul(tp.ones({3, 0}, f64), tp.ones({0, 4}, f64)) end,
  mm_n0 = function() return tp.matmul(tp.ones({0, 3}, f64), tp.ones({3, 4}, f64)) end,
  dot0 = function() return tp.matmul(tp.ones({0}, f64), tp.ones({0}, f64)) end,
  bmm_k0 = function() return tp.matmul(tp.ones({2, 3, 0}, f64), tp.ones({2, 0, 2}, f64)) end,
  einsum = function() return tp.einsum("ij,jk->ik", tp.ones({2, 0}, f64), tp.ones({0, 3}, f64)) end,
  cat = function() return tp.cat({A, tp.zeros({0, 4}, f64)}, 1) end,
  cat_all = function() return tp.cat({Z, Z}, 1) end,
  cat1 = function() return tp.cat({tp.zeros({0, 2}, f64), tp.zeros({0, 3}, f64)}, 2) end,
  stack = function() return tp.stack({tp.zeros({0}, f64), tp.zeros({0}, f64)}, 1) end,
  slice_none = function() return A[{{3, 2}}] end,
  slice_end = function() return A[{{}, {5, 4}}] end,
  slice_back = function() return A[{{1, 2, -1}}] end,
  reshape = function() return Z:reshape(3, 0, 2) end,
  reshape_infer = function() return Z:reshape(-1, 3) end,
  transpose = function() return Z:t() end,
  mask = function() return A[A:gt(100)] end,
  mask_rows = function() return A[tp.tensor{false, false, false}] end,
  where_idx = function() return tp.where(A:reshape(12):gt(100)) end,
  sort = function() return (tp.sort(tp.zeros({0}, f64))) end,
  argsort = function() return tp.argsort(tp.zeros({2, 0}, f64), 2) end,
  cumsum = function() return tp.cumsum(Z, 1) end,
  searchsorted = function() return tp.searchsorted(tp.zeros({0}, f64), tp.tensor({1, 2}, f64)) end,
  unique = function() return tp.unique(tp.zeros({0}, f64)) end,
  diagonal_past = function() return A:diagonal(4) end,
  trace00 = function() return tp.zeros({0, 0}, f64):trace() end,
  tril = function() return tp.tril(Z) end,
  flip = function() return tp.flip(Z, 1) end,
  det00 = function() return tp.linalg.det(tp.zeros({0, 0}, f64)) end,
  det_batch = function() return tp.linalg.det(tp.zeros({2, 0, 0}, f64)) end,
  slogdet_sign = function() return (tp.linalg.slogdet(tp.zeros({0, 0}, f64))) end,
  slogdet_log = function() return select(2, tp.linalg.slogdet(tp.zeros({0, 0}, f64))) end,
  inv00 = function() return tp.linalg.inv(tp.zeros({0, 0}, f64)) end,
  solve = function() return tp.linalg.solve(tp.eye(2, 2, f64), tp.zeros({2, 0}, f64)) end,
  qr_q = function() return (tp.linalg.qr(tp.zeros({3, 0}, f64), "complete")) end,
  qr_r = function() return select(2, tp.linalg.qr(tp.zeros({3, 0}, f64), "complete")) end,
  svd_u = function() return (tp.linalg.svd(tp.zeros({2, 0}, f64))) end,
  svd_s = function() return select(2, tp.linalg.svd(tp.zeros({2, 0}, f64))) end,
  svd_vh = function() return select(3, tp.linalg.svd(tp.zeros({2, 0}, f64))) end,
  pad = function() return tp.zeros({0, 2}, f64):pad({{1, 1}, {0, 0}}, {value = 5}) end,
  roll = function() return tp.zeros({0}, f64):roll(2, 1) end,
  minimum = function() return tp.minimum(tp.zeros({0, 1}, f64), tp.ones({1, 3}, f64)) end,
  write_none = function()
    tp.env.w = A
    tp.env.w[{{3, 2}}] = 7                   -- a region that selects nothing writes nothing
    tp.env.w[tp.env.w:gt(100)] = 0           -- so does a mask with no true element
    return tp.env.w
  end,
}

for name, want in pairs(np) do
  test("numpy." .. name, function()
    local x = tp_of[name]()
    eq(x.shape, want.shape, name .. " shape")
    eq(x.dtype, want.dtype, name .. " dtype")
    check.near(#want.shape == 0 and x:item() or x:totable(), want.value, 1e-12, name)
  end)
end
for name in pairs(tp_of) do check.truthy(np[name], "no numpy value for " .. name) end

test("creation", function()
  eq(tp.zeros{0}.shape, {0})
  eq(tp.tensor{}.dtype, "f32")  -- no element: the default float, as numpy's float64
  eq(tp.rand({0, 2}, {seed = 1}).shape, {0, 2})
  eq(tp.randint(1, 6, {4, 0}).shape, {4, 0})
  eq(tp.eye(0).shape, {0, 0})
  eq(tp.full({2, 0}, 7).shape, {2, 0})
  eq(tp.zeros_like(Z).shape, {0, 3})
  eq(tp.arange(3, 1):totable(), {})
  eq(#tp.zeros{2, 0}:totable(), 2)
end)

test("print", function()
  eq(tostring(Z), "[]\n[f64 tensor of shape {0,3}]")
  eq(tostring(tp.tensor({{}, {}}, {dtype = "i32"})), "[]\n[i32 tensor of shape {2,0}]")
end)

test("empty_feeds_nonempty", function()
  -- What an empty tensor feeds is a constant; the rest of the expression computes as usual.
  local s = (Z:sum(1) + tp.arange(1, 3, 1, f64)) * 2
  eq(s:totable(), {2, 4, 6})
  eq(tp.cat({tp.zeros({0}, f64), tp.arange(1, 3, 1, f64), tp.zeros({0}, f64)}, 1):totable(), {1, 2, 3})
end)

test("npy", function()
  local dir, file = check.scratch_dir()
  tp.save(Z, file("z.npy"))
  local bytes = check.read_file(file("z.npy"))
  check.truthy(bytes:find("'shape': (0, 3)", 1, true), "numpy's header for an empty array")
  eq(#bytes, 128)  -- the header alone: no data
  local y = tp.load(file("z.npy"))
  eq(y.shape, {0, 3})
  eq(y.dtype, "f64")
  eq((y + 1).shape, {0, 3})
  -- as numpy writes np.zeros((2, 0), np.float32)
  local h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0), }"
  h = h .. string.rep(" ", 128 - 10 - #h - 1) .. "\n"
  local f = assert(io.open(file("np.npy"), "wb"))
  f:write("\x93NUMPY\x01\x00" .. string.pack("<I2", #h) .. h)
  f:close()
  local w = tp.load(file("np.npy"))
  eq(w.shape, {2, 0})
  eq(w.dtype, "f32")
  eq(w:sum(2):totable(), {0, 0})
  os.execute("rm -rf '" .. dir .. "'")
end)

test("formats", function()
  -- zarr, safetensors and tp.save_env keep empty tensors; HDF5 refuses to write one, clearly.
  local dir, file = check.scratch_dir()
  tp.save_zarr(Z, file("z.zarr"))
  eq(tp.load_zarr(file("z.zarr")).shape, {0, 3})
  tp.save_safetensors({z = Z, one = tp.ones{2}}, file("z.st"))
  local st = tp.load_safetensors(file("z.st"))
  eq(st.z.shape, {0, 3})
  eq(st.one:totable(), {1, 1})
  tp.env.ze = tp.zeros({2, 0}, {dtype = "i32"})
  tp.save_env(file("env"))
  tp.env.ze = nil
  tp.load_env(file("env"))
  eq(tp.env.ze.shape, {2, 0})
  eq(tp.env.ze.dtype, "i32")
  tp.env.ze = nil
  check.check_error(function() tp.save_hdf5(Z, file("z.h5"), "z") end, "tp.save_hdf5", "{0,3} is empty")
  os.execute("rm -rf '" .. dir .. "'")
end)

test("env", function()
  tp.env.e = tp.zeros({4, 0}, f64)
  tp.eval(tp.env.e)
  eq(tp.env.e.shape, {4, 0})
  eq(tp.env.e:sum(2):totable(), {0, 0, 0, 0})
  tp.env.e = tp.env.e * 2
  eq(tp.env.e.shape, {4, 0})
  tp.env.e = nil
end)

test("grad", function()
  -- An empty param gets an empty gradient; a param reached only through an empty tensor, zeros.
  local w = tp.detach(tp.rand({3}, {seed = 3, dtype = "f64"}))
  local e = tp.detach(tp.rand({0, 3}, {seed = 4, dtype = "f64"}))
  local loss = (e * w):sum() + (w * w):sum()
  local g = tp.grad(loss, {w, e})
  check.near(g[1]:totable(), (w * 2):totable(), 1e-12)
  eq(g[2].shape, {0, 3})
  local only = tp.grad((e * w):sum() + 1, {w})[1]
  eq(only:totable(), {0, 0, 0})
  local m = tp.detach(tp.rand({2, 0}, {seed = 5, dtype = "f64"}))
  local mm = tp.grad(tp.matmul(m, tp.ones({0, 2}, f64)):sum(), {m})[1]
  eq(mm.shape, {2, 0})
end)

check.summary()
