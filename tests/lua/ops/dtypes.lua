-- The dtypes i8, u8, f16, bf16, c64 and c128 against numpy: promotion (numpy's table, NEP 50
-- weak Lua numbers), f16 rounding per op, bf16 rounding, integer wrapping, complex arithmetic,
-- functions, reductions, matmul and printing; sharded complex matmul and sums; .npy round trips;
-- bad inputs. The expected values are numpy 1.24's with weak promotion (numpy 2's rules), printed
-- by tests/lua/ops/dtypes_numpy.py. Runs on 1 rank, 3 virtual ranks and under mpirun.
package.path = (arg[0]:match("^(.*)/") or ".") .. "/../lib/?.lua;" .. package.path
local check = require "check"
local test, eq, near, err = check.test, check.eq, check.near, check.check_error

local np = {
  promote = {bool = {bool = "bool", i8 = "i8", u8 = "u8", i32 = "i32", i64 = "i64", f16 = "f16", f32 = "f32", f64 = "f64", c64 = "c64", c128 = "c128"}, i8 = {bool = "i8", i8 = "i8", u8 = "i16", i32 = "i32", i64 = "i64", f16 = "f16", f32 = "f32", f64 = "f64", c64 = "c64", c128 = "c128"}, u8 = {bool = "u8", i8 = "i16", u8 = "u8", i32 = "i32", i64 = "i64", f16 = "f16", f32 = "f32", f64 = "f64", c64 = "c64", c128 = "c128"}, i32 = {bool = "i32", i8 = "i32", u8 = "i32", i32 = "i32", i64 = "i64", f16 = "f64", f32 = "f64", f64 = "f64", c64 = "c128", c128 = "c128"}, i64 = {bool = "i64", i8 = "i64", u8 = "i64", i32 = "i64", i64 = "i64", f16 = "f64", f32 = "f64", f64 = "f64", c64 = "c128", c128 = "c128"}, f16 = {bool = "f16", i8 = "f16", u8 = "f16", i32 = "f64", i64 = "f64", f16 = "f16", f32 = "f32", f64 = "f64", c64 = "c64", c128 = "c128"}, f32 = {bool = "f32", i8 = "f32", u8 = "f32", i32 = "f64", i64 = "f64", f16 = "f32", f32 = "f32", f64 = "f64", c64 = "c64", c128 = "c128"}, f64 = {bool = "f64", i8 = "f64", u8 = "f64", i32 = "f64", i64 = "f64", f16 = "f64", f32 = "f64", f64 = "f64", c64 = "c128", c128 = "c128"}, c64 = {bool = "c64", i8 = "c64", u8 = "c64", i32 = "c128", i64 = "c128", f16 = "c64", f32 = "c64", f64 = "c128", c64 = "c64", c128 = "c128"}, c128 = {bool = "c128", i8 = "c128", u8 = "c128", i32 = "c128", i64 = "c128", f16 = "c128", f32 = "c128", f64 = "c128", c64 = "c128", c128 = "c128"}},
  weak_int = {bool = "i64", i8 = "i8", u8 = "u8", i32 = "i32", i64 = "i64", f16 = "f16", f32 = "f32", f64 = "f64", c64 = "c64", c128 = "c128"},
  weak_float = {bool = "f64", i8 = "f64", u8 = "f64", i32 = "f64", i64 = "f64", f16 = "f16", f32 = "f32", f64 = "f64", c64 = "c64", c128 = "c128"},
  h_in = {0.1, 0.3333333333333333, 65504.0, 65519.0, 65520.0, 1e-07, 3e-08, 2.9802322387695312e-08, -2.5, 1000.5},
  h_cast = {0.0999755859375, 0.333251953125, 65504.0, 65504.0, math.huge, 1.1920928955078125e-07, 5.960464477539063e-08, 0.0, -2.5, 1000.5},
  h_add = {3.099609375, 1.033203125, 100.0, -5.25},
  h_mul = {0.2998046875, 0.2333984375, 0.10003662109375, -14.5},
  h_div = {0.0333251953125, 0.475830078125, math.huge, -3.625},
  h_sub = {-2.900390625, -0.366943359375, 100.0, -9.25},
  h_exp = {20.078125, 2.013671875, 1.0009765625, 7.390625},
  h_sqrt = {1.732421875, 0.8369140625, 0.0316162109375, 1.4140625},
  h_adds = {0.199951171875, 0.43310546875, 100.125, -7.1484375},
  h_sum = 93.1875,
  h_mean = 23.296875,
  h_max = 100.0,
  h_sort = {-7.25, 0.0999755859375, 0.333251953125, 100.0},
  h_matmul = {{0.30029296875, 0.736328125}, {300.0, 55.53125}},
  h_print = '[  0.1      0.3333 100.      -7.25  ]',
  h_print_scalar = '0.3333',
  b_in = {0.1, 0.3333333333333333, 3e+38, 1.00390625, 1.01171875, -2.5, 1e-40},
  b_cast = {0.10009765625, 0.333984375, 3.00405527047391e+38, 1.0, 1.015625, -2.5, 9.183549615799121e-41},
  b_add = {0.2001953125, 0.43359375, 3.00405527047391e+38, 1.1015625},
  i8_add = {-28, 0, 105, -29},
  i8_mul = {-128, -44, 15, 125},
  i8_neg = {-128, 100, -5, -127},
  i8_floordiv = {18, 14, -1, -19},
  i8_mod = {-2, -2, -2, -6},
  u8_sub = {246, 190, 251, 245},
  u8_mul = {0, 88, 15, 253},
  u8_neg = {0, 56, 251, 1},
  u8_floordiv = {0, 28, 0, 36},
  u8_mod = {0, 4, 5, 3},
  i8_u8 = {-128, 100, 10, 382},
  i8_sum = -96,
  u8_sum = 460,
  f_to_i8 = {1, -1, 127, -128},
  f_to_u8 = {1, 0, 254, 3},
  zr = {1.0, 3.5, -2.0, 0.0, 0.001},
  zi = {2.0, -4.0, 0.5, -1.0, 7.0},
  wr = {0.5, -1.0, 2.0, 3.0, -0.25},
  wi = {1.0, 1.0, -3.0, 0.5, 2.0},
  z_mul_re = {-1.5, 0.5, -2.5, 0.5, -14.000249862670898},
  z_mul_im = {2.0, 7.5, 7.0, -3.0, -1.7480000257492065},
  z_div_re = {2.0, -3.75, -0.42307689785957336, -0.05405405908823013, 3.446092367172241},
  z_div_im = {0.0, 0.25, -0.38461536169052124, -0.3243243396282196, -0.4312615394592285},
  z_add_re = {1.5, 2.5, 0.0, 3.0, -0.24899999797344208},
  z_add_im = {3.0, -3.0, -2.5, -0.5, 9.0},
  z_sub_re = {0.5, 4.5, -4.0, -3.0, 0.25099998712539673},
  z_sub_im = {1.0, -5.0, 3.5, -1.5, 5.0},
  z_exp_re = {-1.13120436668396, -21.64570426940918, 0.1187678799033165, 0.5403022766113281, 0.7546565532684326},
  z_exp_im = {2.471726655960083, 25.061857223510742, 0.06488319486379623, -0.8414709568023682, 0.6576439142227173},
  z_log_re = {0.8047189712524414, 1.6705467700958252, 0.7234594821929932, 0.0, 1.945910096168518},
  z_log_im = {1.1071487665176392, -0.851966381072998, 2.8966140747070312, -1.5707963705062866, 1.5706534385681152},
  z_sqrt_re = {1.272019624710083, 2.0994133949279785, 0.17543205618858337, 0.7071067690849304, 1.8709622621536255},
  z_sqrt_im = {0.7861514091491699, -0.9526470899581909, 1.4250531196594238, -0.7071067690849304, 1.8706951141357422},
  z_sin_re = {3.165778636932373, -9.579269409179688, -1.025347352027893, 0.0, 0.5483169555664062},
  z_sin_im = {1.9596009254455566, 25.55582618713379, -0.21685215830802917, -1.175201177597046, 548.31591796875},
  z_cos_re = {2.0327229499816895, -25.572975158691406, -0.46925798058509827, 1.5430805683135986, 548.3167724609375},
  z_cos_im = {-3.0518977642059326, -9.572845458984375, 0.47383058071136475, 0.0, -0.5483161211013794},
  z_square_re = {-3.0, -3.75, 3.75, -1.0, -49.0},
  z_square_im = {4.0, -28.0, -2.0, -0.0, 0.014000000432133675},
  z_recip_re = {0.20000000298023224, 0.12389380484819412, -0.47058823704719543, 0.0, 2.040816434600856e-05},
  z_recip_im = {-0.4000000059604645, 0.14159291982650757, -0.11764705926179886, 1.0, -0.1428571492433548},
  z_pow2_re = {-3.0, -3.75, 3.75, -1.0, -49.0},
  z_pow2_im = {4.0, -28.0, -2.0, -0.0, 0.014000000432133675},
  z_pow3_re = {-11.0, -125.125, -6.5, -0.0, -0.1470000147819519},
  z_pow3_im = {-2.0, -83.0, 5.875, 1.0, -343.0},
  z_powm2_re = {-0.11999999731779099, -0.0046988800168037415, 0.20761245489120483, -1.0, -0.020408160984516144},
  z_powm2_im = {-0.1599999964237213, 0.03508497029542923, 0.11072664707899094, -0.0, -5.830902864545351e-06},
  z_powz_re = {0.10423306375741959, -0.3592028319835663, -22385.9609375, 2.615460203969633e-08, -0.02489418350160122},
  z_powz_im = {0.4830959141254425, 0.2559392750263214, -11690.1640625, 2.193279981613159, -0.00930107943713665},
  z_conj_re = {1.0, 3.5, -2.0, 0.0, 0.0010000000474974513},
  z_conj_im = {-2.0, 4.0, -0.5, 1.0, -7.0},
  z_neg_re = {-1.0, -3.5, 2.0, -0.0, -0.0010000000474974513},
  z_neg_im = {-2.0, 4.0, -0.5, 1.0, -7.0},
  z_adds_re = {3.5, 6.0, 0.5, 2.5, 2.500999927520752},
  z_adds_im = {2.0, -4.0, 0.5, -1.0, 7.0},
  z_muls_re = {2.0, 7.0, -4.0, 0.0, 0.0020000000949949026},
  z_muls_im = {4.0, -8.0, 1.0, -2.0, 14.0},
  z_abs = {2.2360680103302, 5.315073013305664, 2.0615527629852295, 1.0, 7.0},
  z_angle = {1.1071487665176392, -0.8519663214683533, 2.8966140747070312, -1.5707963705062866, 1.5706535577774048},
  z_eq = {true, false, true, false, true},
  z_sum = {2.500999927520752, 4.5},
  z_prod = {-171.500244140625, -1.7254999876022339},
  z_mean = {0.5001999735832214, 0.8999999761581421},
  z_var = 16.439800262451172,
  z_print = '[1. +2.j 3.5-4.j]',
  z_print_scalar = '(1.5-2j)',
  mm_re = {{2.0, 0.0, -2.0, 2.0}, {-3.0, 5.0, -2.0, -3.0}, {-1.0, -4.0, 5.0, -1.0}, {1.0, 1.0, -2.0, 1.0}, {-4.0, -1.0, 5.0, -4.0}, {5.0, -3.0, -2.0, 5.0}},
  mm_im = {{8.5, 3.5, -4.5, -6.5}, {2.5, 1.5, -2.5, -0.5}, {-3.5, -0.5, -0.5, 5.5}, {1.0, 1.0, -2.0, 1.0}, {5.5, 2.5, -3.5, -3.5}, {-0.5, 0.5, -1.5, 2.5}},
  mm_sum_dim1_re = {0.0, -2.0, 2.0, 0.0},
  mm_sum_dim1_im = {13.5, 8.5, -14.5, -1.5},
}

-- numpy's int16 (u8 with i8) is Tapestry's i32: there is no i16.
np.promote.i8.u8, np.promote.u8.i8 = "i32", "i32"

local D = {"bool", "i8", "u8", "i32", "i64", "f16", "f32", "f64", "c64", "c128"}

local function parts(z) return z:real():cast("f64"):totable(), z:imag():cast("f64"):totable() end
local function near_c(z, re, im, tol, what)
  local r, i = parts(z)
  near(r, re, tol, what .. " (real)")
  near(i, im, tol, what .. " (imag)")
end

test("promote.table", function()
  for _, a in ipairs(D) do
    for _, b in ipairs(D) do
      local x, y = tp.ones({2}, {dtype = a}), tp.ones({3, 1}, {dtype = b})
      eq((x + y).dtype, np.promote[a][b], a .. " + " .. b)
      eq(tp.result_type(x, y), np.promote[a][b], "result_type " .. a .. ", " .. b)
    end
  end
end)

test("promote.bf16", function()
  -- numpy has no bf16: it promotes as f16 does, and f16 with bf16 needs f32 (as jax and torch).
  local want = {bool = "bf16", i8 = "bf16", u8 = "bf16", i32 = "f64", i64 = "f64", f16 = "f32",
                bf16 = "bf16", f32 = "f32", f64 = "f64", c64 = "c64", c128 = "c128"}
  for b, w in pairs(want) do
    eq(tp.result_type(tp.ones({2}, {dtype = "bf16"}), tp.ones({2}, {dtype = b})), w, "bf16 + " .. b)
  end
  eq(tp.result_type(tp.ones({2}, {dtype = "bf16"}), 2.5), "bf16")
end)

test("promote.weak", function()
  for _, a in ipairs(D) do
    local x = tp.ones({2}, {dtype = a})
    eq((x + 2).dtype, np.weak_int[a], a .. " + 2")
    eq((2.5 + x).dtype, np.weak_float[a], "2.5 + " .. a)
    eq(tp.result_type(x, 2.5), np.weak_float[a])
  end
  eq(tp.result_type(2, 2.5), "f32")
  eq(tp.result_type(true, 2), "i64")
end)

test("f16.cast", function()
  local h = tp.tensor(np.h_in, {dtype = "f64"}):cast("f16")
  eq(h.dtype, "f16")
  eq(h:cast("f64"):totable(), np.h_cast)
  eq(tp.tensor(np.h_in, {dtype = "f16"}):totable(), np.h_cast, "tp.tensor rounds once from the double")
end)

test("f16.ops", function()
  local a = tp.tensor({0.1, 1/3, 100, -7.25}, {dtype = "f16"})
  local b = tp.tensor({3, 0.7, 0.001, 2}, {dtype = "f16"})
  local cases = {h_add = a + b, h_mul = a * b, h_div = a / b, h_sub = a - b, h_exp = tp.exp(b),
                 h_sqrt = tp.sqrt(b), h_adds = a + 0.1, h_sort = tp.sort(a)}
  for k, v in pairs(cases) do
    eq(v.dtype, "f16", k)
    eq(v:cast("f64"):totable(), np[k], k)
  end
  eq(a:sum():cast("f64"):item(), np.h_sum, "sum")
  eq(a:mean():cast("f64"):item(), np.h_mean, "mean")
  eq(a:max():cast("f64"):item(), np.h_max, "max")
  eq(a:argmax():item(), 3, "argmax")
  local m = a:reshape{2, 2}:matmul(b:reshape{2, 2})
  eq(m.dtype, "f16")
  eq(m:cast("f64"):totable(), np.h_matmul, "matmul")
  eq(tostring(a):match("^[^\n]*"), np.h_print, "print")
  eq(tostring(a:select(1, 2)), np.h_print_scalar, "print a scalar")
  eq((a:cast("f32") + 1).dtype, "f32")
end)

test("bf16.ops", function()
  local b = tp.tensor(np.b_in, {dtype = "bf16"})
  eq(b:cast("f64"):totable(), np.b_cast)
  eq(tp.tensor(np.b_in):cast("bf16"):cast("f64"):totable(), np.b_cast, "through f32")
  local s = b:narrow(1, 1, 4) + tp.tensor({0.1}, {dtype = "bf16"})
  eq(s.dtype, "bf16")
  eq(s:cast("f64"):totable(), np.b_add)
end)

test("i8.u8", function()
  local i8 = tp.tensor({-128, -100, 5, 127}, {dtype = "i8"})
  local u8 = tp.tensor({0, 200, 5, 255}, {dtype = "u8"})
  eq((i8 + 100):totable(), np.i8_add)
  eq((i8 * 3):totable(), np.i8_mul)
  eq((-i8):totable(), np.i8_neg)
  eq((i8 // -7):totable(), np.i8_floordiv)
  eq((i8 % -7):totable(), np.i8_mod)
  eq((u8 - 10):totable(), np.u8_sub)
  eq((u8 * 3):totable(), np.u8_mul)
  eq((-u8):totable(), np.u8_neg)
  eq((u8 // 7):totable(), np.u8_floordiv)
  eq((u8 % 7):totable(), np.u8_mod)
  local m = i8 + u8
  eq(m.dtype, "i32")
  eq(m:totable(), np.i8_u8)
  eq(i8:sum():item(), np.i8_sum)
  eq(u8:sum():item(), np.u8_sum)
  eq(u8:sum().dtype, "i64", "u8 sums to i64 (numpy: u64, which Tapestry lacks)")
  eq(tp.tensor({1.9, -1.9, 127.4, -128.6}, {dtype = "f64"}):cast("i8"):totable(), np.f_to_i8)
  eq(tp.tensor({1.9, 0.2, 254.9, 3.5}, {dtype = "f64"}):cast("u8"):totable(), np.f_to_u8)
  eq(u8:max():item(), 255)
  eq(i8:argmin():item(), 1)
  eq(tp.sort(u8):totable(), {0, 5, 200, 255})
  eq(tp.cumsum(i8):totable(), {-128, -228, -223, -96}, "cumsum in i64")
  eq(tostring(i8):match("^[^\n]*"), "[-128 -100    5  127]")
end)

local z = tp.complex(tp.tensor(np.zr, {dtype = "f64"}), tp.tensor(np.zi, {dtype = "f64"})):cast("c64")
local w = tp.complex(tp.tensor(np.wr), tp.tensor(np.wi))

test("complex.make", function()
  eq(z.dtype, "c64")
  eq(w.dtype, "c64")
  eq(tp.complex(tp.ones({2}, {dtype = "f64"}), 0).dtype, "c128")
  eq(tp.complex(1, 2).dtype, "c64")
  eq(z:real().dtype, "f32")
  eq(z:cast("c128"):abs().dtype, "f64")
  eq(tp.real(tp.ones{2}):totable(), {1, 1})
  eq(tp.imag(tp.ones({2}, {dtype = "i32"})):totable(), {0, 0})
  near(tp.angle(tp.tensor{-1, 1}):totable(), {math.pi, 0})
end)

test("complex.arith", function()
  local cases = {mul = z * w, div = z / w, add = z + w, sub = z - w, exp = tp.exp(z), log = tp.log(z),
                 sqrt = tp.sqrt(z), sin = tp.sin(z), cos = tp.cos(z), square = tp.square(z),
                 recip = tp.reciprocal(z), pow2 = z ^ 2, pow3 = z ^ 3, powm2 = z ^ -2, powz = z ^ w,
                 conj = z:conj(), neg = -z, adds = z + 2.5, muls = z * 2}
  for k, v in pairs(cases) do
    eq(v.dtype, "c64", k)
    near_c(v, np["z_" .. k .. "_re"], np["z_" .. k .. "_im"], k == "powz" and 1e-4 or 2e-6, k)
  end
  near(z:abs():totable(), np.z_abs, 1e-6, "abs")
  near(z:angle():totable(), np.z_angle, 1e-6, "angle")
  local other = tp.complex(tp.tensor{1, 3.5, -2, 1, 1e-3}, tp.tensor{2, 4, 0.5, 0, 7})
  eq(z:eq(other):totable(), np.z_eq, "==")
  eq(z:ne(other):totable(), {false, true, false, true, false}, "~=")
end)

test("complex.reduce", function()
  near({z:sum():real():item(), z:sum():imag():item()}, np.z_sum, 1e-6, "sum")
  near({z:prod():real():item(), z:prod():imag():item()}, np.z_prod, 1e-6, "prod")
  near({z:mean():real():item(), z:mean():imag():item()}, np.z_mean, 1e-6, "mean")
  eq(z:var().dtype, "f32")
  near(z:var():item(), np.z_var, 1e-6, "var")
  eq(tp.norm(z).dtype, "f32")
end)

test("complex.print", function()
  eq(tostring(z:narrow(1, 1, 2)):match("^[^\n]*"), np.z_print)
  eq(tostring(tp.complex(1.5, -2)), np.z_print_scalar)
  eq(tostring(tp.complex(0, 2)), "2j")
end)

-- A product and a column sum large enough to be cut into blocks on several ranks.
test("complex.matmul", function()
  local i = tp.arange(0, 29, 1, {dtype = "i64"}):reshape{6, 5}
  local j = tp.arange(0, 19, 1, {dtype = "i64"}):reshape{5, 4}
  local a = tp.complex(i % 7 - 3, i % 5 - 2):cast("c128")
  local b = tp.complex(j % 3 - 1, j % 4 - 1.5)
  eq(a.dtype, "c128")
  eq(b.dtype, "c128")
  local c = a:matmul(b)
  eq(c.dtype, "c128")
  eq(c:real():totable(), np.mm_re)
  eq(c:imag():totable(), np.mm_im)
  local s = c:sum(1)
  eq(s:real():totable(), np.mm_sum_dim1_re)
  eq(s:imag():totable(), np.mm_sum_dim1_im)
  local c64 = a:cast("c64"):matmul(b:cast("c64"))
  eq(c64.dtype, "c64")
  eq(c64:real():cast("f64"):totable(), np.mm_re)
  tp.env.zc = c
  eq(tp.env.zc:imag():sum():item(), 0 + 13.5 + 8.5 - 14.5 - 1.5, "a named complex tensor")
  tp.env.zc = nil
end)

-- Larger: each rank holds blocks of the product, and sums over a sharded dim combine partial
-- complex sums. Integer parts, so the complex product equals the real products' combination.
test("complex.matmul.sharded", function()
  local ar = (tp.arange(1, 64 * 48) % 13 - 6):reshape{64, 48}:cast("f64")
  local ai = (tp.arange(1, 64 * 48) % 7 - 3):reshape{64, 48}:cast("f64")
  local br = (tp.arange(1, 48 * 40) % 5 - 2):reshape{48, 40}:cast("f64")
  local bi = (tp.arange(1, 48 * 40) % 11 - 5):reshape{48, 40}:cast("f64")
  local c = tp.complex(ar, ai):matmul(tp.complex(br, bi))
  check.truthy(c:real():eq(ar:matmul(br) - ai:matmul(bi)):all():item(), "real part")
  check.truthy(c:imag():eq(ar:matmul(bi) + ai:matmul(br)):all():item(), "imaginary part")
  local s = c:sum(1)
  check.truthy(s:real():eq((ar:matmul(br) - ai:matmul(bi)):sum(1)):all():item(), "column sums")
  local t = tp.complex(ar, ai):cast("c64"):sum()
  eq({t:real():item(), t:imag():item()}, {ar:sum():item(), ai:sum():item()}, "c64 sum")
end)

test("npy.roundtrip", function()
  local dir, path = check.scratch_dir()
  local xs = {tp.tensor({-3, 4}, {dtype = "i8"}), tp.tensor({250, 4}, {dtype = "u8"}),
              tp.tensor({0.1, -2}, {dtype = "f16"}), tp.tensor({0.1, -2}, {dtype = "bf16"}),
              tp.complex(tp.tensor{1, 2}, tp.tensor{-3, 0.5}), tp.complex(tp.tensor({1, 2}, {dtype = "f64"}), 0.25)}
  for k, x in ipairs(xs) do
    local p = path("x" .. k .. ".npy")
    tp.save(x, p)
    local y = tp.load(p)
    eq(y.dtype, x.dtype, x.dtype)
    check.truthy(y:eq(x):all():item(), x.dtype .. " values")
  end
  os.execute("rm -rf '" .. dir .. "'")
end)

test("grad", function()
  local x = tp.detach(tp.tensor({1, 2, 3}, {dtype = "f16"}))
  local g = tp.grad((x * x):sum(), {x})[1]
  eq(g.dtype, "f16")
  eq(g:cast("f64"):totable(), {2, 4, 6})
  -- through complex values (tests/lua/grad/complex.lua has the rest): d|y + i|/dy = y / |y + i|
  local y = tp.detach(tp.tensor{1, 2})
  local gy = tp.grad(tp.complex(y, 1):abs():sum(), {y})[1]
  eq(gy.dtype, "f32")
  near(gy:totable(), {1 / math.sqrt(2), 2 / math.sqrt(5)}, 1e-6)
  err(function() return tp.grad(tp.complex(y, 1):sum(), {y}) end, "tp.grad", "loss must be a real float")
end)

-- Files numpy writes read equal here, and files written here read equal in numpy (the script
-- runs on rank 0 only, as every Lua chunk; the other ranks join the loads and saves).
test("npy.numpy", function()
  local dir, path = check.scratch_dir()
  local py = [[
import sys, numpy as np
d, mode = sys.argv[1], sys.argv[2]
want = {"i8": np.array([-128, -1, 5, 127], np.int8), "u8": np.array([0, 200, 255, 7], np.uint8),
        "f16": np.array([0.1, -2.5, 65504, 1e-7], np.float16),
        "c64": np.array([1 + 2j, -3.5 - 0.25j], np.complex64), "c128": np.array([0.1 + 1e-3j, -7j], np.complex128)}
for k, v in want.items():
    if mode == "write": np.save(d + "/np_" + k + ".npy", v)
    else:
        got = np.load(d + "/tp_" + k + ".npy")
        assert got.dtype == v.dtype and np.array_equal(got, v), (k, got.dtype, got)
bf = np.load(d + "/tp_bf16.npy") if mode == "read" else None
if bf is not None:
    assert bf.dtype.str in ("|V2", "<V2"), bf.dtype
    bits = np.frombuffer(bf.tobytes(), np.uint16)
    assert list(bits) == [0x3f80, 0xc020], list(bits)   # 1.0 and -2.5
print("numpy ok")
]]
  local script = path("check.py")
  local f = assert(io.open(script, "w"))
  f:write(py)
  f:close()
  check.truthy(os.execute("/usr/bin/python3 '" .. script .. "' '" .. dir .. "' write") == true, "numpy writes")
  local want = {i8 = {-128, -1, 5, 127}, u8 = {0, 200, 255, 7}, f16 = {0.0999755859375, -2.5, 65504, 1.1920928955078125e-07}}
  for k, v in pairs(want) do
    local x = tp.load(path("np_" .. k .. ".npy"))
    eq(x.dtype, k)
    eq(x:cast("f64"):totable(), v, k)
  end
  local c = tp.load(path("np_c64.npy"))
  eq(c.dtype, "c64")
  eq({c:real():totable(), c:imag():totable()}, {{1, -3.5}, {2, -0.25}})
  eq(tp.load(path("np_c128.npy")):imag():totable(), {1e-3, -7})
  tp.save(tp.tensor({-128, -1, 5, 127}, {dtype = "i8"}), path("tp_i8.npy"))
  tp.save(tp.tensor({0, 200, 255, 7}, {dtype = "u8"}), path("tp_u8.npy"))
  tp.save(tp.tensor({0.1, -2.5, 65504, 1e-7}, {dtype = "f16"}), path("tp_f16.npy"))
  tp.save(tp.complex(tp.tensor{1, -3.5}, tp.tensor{2, -0.25}), path("tp_c64.npy"))
  tp.save(tp.complex(tp.tensor({0.1, 0}, {dtype = "f64"}), tp.tensor({1e-3, -7}, {dtype = "f64"})), path("tp_c128.npy"))
  tp.save(tp.tensor({1, -2.5}, {dtype = "bf16"}), path("tp_bf16.npy"))
  check.truthy(os.execute("/usr/bin/python3 '" .. script .. "' '" .. dir .. "' read") == true, "numpy reads")
  os.execute("rm -rf '" .. dir .. "'")
end)

test("bad.complex", function()
  err(function() return z:max() end, "tp.max", "c64", "complex")
  err(function() return z:lt(w) end, "lt", "c64", "complex")
  err(function() return tp.maximum(z, 1) end, "maximum", "complex")
  err(function() return tp.sort(z) end, "sort", "c64")
  err(function() return z:argmax() end, "argmax", "complex")
  err(function() return tp.floor(z) end, "floor", "complex")
  err(function() return z // w end, "floordiv", "complex")
  err(function() return z:sum():item() end, "c64", "real()")
  err(function() return z:totable() end, "c64", "real()")
  err(function() return tp.complex(z, 1) end, "tp.complex", "re is c64")
  err(function() return tp.linalg.inv(tp.complex(tp.eye(2), 0)) end, "c64")
  err(function() return tp.conv2d(tp.complex(tp.ones{1, 1, 3, 3}, 0), tp.ones{1, 1, 2, 2}) end, "c64")
end)

test("bad.dtypes", function()
  err(function() return tp.ones({2}, {dtype = "i8"}) + 300 end, "300", "does not fit in i8")
  err(function() return tp.ones({2}, {dtype = "u8"}) - (-1) end, "-1", "does not fit in u8")
  err(function() return tp.ones({2}, {dtype = "f17"}) end, "unknown dtype", "bf16")
  err(function() return tp.tensor({300}, {dtype = "i8"}) end, "300", "i8")
  err(function() return tp.linalg.inv(tp.eye(2):cast("f16")) end, "f16")
  err(function() return tp.randint(0, 3, {2}, {dtype = "c64"}) end, "c64")
end)

check.summary()
