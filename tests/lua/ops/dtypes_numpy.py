# Prints the numpy values that tests/lua/ops/dtypes.lua pastes in: /usr/bin/python3 dtypes_numpy.py
# (numpy 1.24 with NEP 50's weak scalars switched on, which numpy 2 has by default).
import struct
import numpy as np
np._set_promotion_state('weak')

N = {'bool': np.bool_, 'i8': np.int8, 'u8': np.uint8, 'i32': np.int32, 'i64': np.int64,
     'f16': np.float16, 'f32': np.float32, 'f64': np.float64, 'c64': np.complex64, 'c128': np.complex128}
R = {np.dtype(v): k for k, v in N.items()}
R[np.dtype(np.int16)] = 'i16'

def lua(a):
    a = np.asarray(a)
    if a.ndim == 0:
        x = a.item()
        if isinstance(x, bool): return 'true' if x else 'false'
        if isinstance(x, float):
            if x != x: return '0/0'
            if x in (float('inf'), float('-inf')): return 'math.huge' if x > 0 else '-math.huge'
        return repr(x)
    return "{" + ", ".join(lua(x) for x in a) + "}"

out = {}
# The promotion table of the numpy dtypes (u8 with i8 is numpy's i16: Tapestry's i32).
out['promote'] = '{' + ', '.join(
    '%s = {%s}' % (a, ', '.join('%s = "%s"' % (b, R[np.promote_types(N[a], N[b])]) for b in N)) for a in N) + '}'
# Weak Lua numbers (NEP 50): the dtype of tensor + 2 and tensor + 2.5.
out['weak_int'] = '{' + ', '.join('%s = "%s"' % (a, R[(np.ones(2, N[a]) + 2).dtype]) for a in N) + '}'
out['weak_float'] = '{' + ', '.join('%s = "%s"' % (a, R[(np.ones(2, N[a]) + 2.5).dtype]) for a in N) + '}'

# f16: values that round (ties, subnormals, overflow), arithmetic rounded per op.
h = np.array([0.1, 1/3, 65504, 65519, 65520, 1e-7, 3e-8, 2.0**-25, -2.5, 1000.5], dtype=np.float64)
out['h_in'] = lua(h)
hf = h.astype(np.float16)
out['h_cast'] = lua(hf.astype(np.float64))
a = np.array([0.1, 1/3, 100, -7.25], dtype=np.float16); b = np.array([3, 0.7, 0.001, 2], dtype=np.float16)
for k, v in {'h_add': a + b, 'h_mul': a * b, 'h_div': a / b, 'h_sub': a - b, 'h_exp': np.exp(b),
             'h_sqrt': np.sqrt(b), 'h_adds': a + 0.1, 'h_sum': np.float16(a.sum()),
             'h_mean': a.mean(), 'h_max': a.max(), 'h_sort': np.sort(a),
             'h_matmul': (a.reshape(2, 2) @ b.reshape(2, 2))}.items():
    assert v.dtype == np.float16, k
    out[k] = lua(np.asarray(v, np.float64))
out['h_print'] = repr(str(a))
out['h_print_scalar'] = repr(str(np.float16(1/3)))

# bf16: f32's top half rounded to nearest even (numpy has no bf16: computed from the f32 bits).
def bf16(x):
    u = struct.unpack('<I', struct.pack('<f', np.float32(x)))[0]
    u = (u + 0x7fff + ((u >> 16) & 1)) >> 16
    return struct.unpack('<f', struct.pack('<I', u << 16))[0]
bv = [0.1, 1/3, 3.0e38, 1.00390625, 1.01171875, -2.5, 1e-40]
out['b_in'] = lua(np.array(bv))
out['b_cast'] = lua(np.array([bf16(x) for x in bv]))
out['b_add'] = lua(np.array([bf16(np.float32(bf16(x)) + np.float32(bf16(0.1))) for x in bv[:4]]))

# i8 and u8 wrap; sums are i64 (numpy's u8 sum is u64).
i8 = np.array([-128, -100, 5, 127], dtype=np.int8); u8 = np.array([0, 200, 5, 255], dtype=np.uint8)
out['i8_add'] = lua(i8 + np.int8(100)); out['i8_mul'] = lua(i8 * np.int8(3)); out['i8_neg'] = lua(-i8)
out['i8_floordiv'] = lua(i8 // np.int8(-7)); out['i8_mod'] = lua(i8 % np.int8(-7))
out['u8_sub'] = lua(u8 - np.uint8(10)); out['u8_mul'] = lua(u8 * np.uint8(3)); out['u8_neg'] = lua(-u8)
out['u8_floordiv'] = lua(u8 // np.uint8(7)); out['u8_mod'] = lua(u8 % np.uint8(7))
out['i8_u8'] = lua((i8 + u8).astype(np.int32)); out['i8_sum'] = lua(i8.sum()); out['u8_sum'] = lua(int(u8.sum()))
out['f_to_i8'] = lua(np.array([1.9, -1.9, 127.4, -128.6]).astype(np.int8))
out['f_to_u8'] = lua(np.array([1.9, 0.2, 254.9, 3.5]).astype(np.uint8))

# Complex numbers.
zr = np.array([1, 3.5, -2, 0, 1e-3]); zi = np.array([2, -4, 0.5, -1, 7])
z = (zr + 1j * zi).astype(np.complex64); w = (np.array([0.5, -1, 2, 3, -0.25]) + 1j * np.array([1, 1, -3, 0.5, 2])).astype(np.complex64)
out['zr'] = lua(zr); out['zi'] = lua(zi)
out['wr'] = lua(w.real.astype(np.float64)); out['wi'] = lua(w.imag.astype(np.float64))
for k, v in {'mul': z * w, 'div': z / w, 'add': z + w, 'sub': z - w, 'exp': np.exp(z), 'log': np.log(z),
             'sqrt': np.sqrt(z), 'sin': np.sin(z), 'cos': np.cos(z), 'square': np.square(z),
             'recip': np.reciprocal(z), 'pow2': z ** 2, 'pow3': z ** 3, 'powm2': z ** -2, 'powz': z ** w,
             'conj': np.conj(z), 'neg': -z, 'adds': z + 2.5, 'muls': z * 2}.items():
    assert v.dtype == np.complex64, k
    out['z_' + k + '_re'] = lua(v.real.astype(np.float64)); out['z_' + k + '_im'] = lua(v.imag.astype(np.float64))
out['z_abs'] = lua(np.abs(z).astype(np.float64)); out['z_angle'] = lua(np.angle(z).astype(np.float64))
out['z_eq'] = lua(z == np.array([1 + 2j, 3.5 + 4j, -2 + 0.5j, 1, 1e-3 + 7j], dtype=np.complex64))
s = z.sum(); p = z.prod(); m = z.mean(); var = z.var()
out['z_sum'] = lua([s.real, s.imag]); out['z_prod'] = lua([p.real, p.imag]); out['z_mean'] = lua([m.real, m.imag])
out['z_var'] = lua(float(var)); assert var.dtype == np.float32
out['z_print'] = repr(str(z[:2])); out['z_print_scalar'] = repr(str(np.complex64(1.5 - 2j)))
# c128 matmul of a 6x5 by 5x4 (values from integers, so each product is exact in numpy and here)
A = (np.arange(30).reshape(6, 5) % 7 - 3) + 1j * (np.arange(30).reshape(6, 5) % 5 - 2)
B = (np.arange(20).reshape(5, 4) % 3 - 1) + 1j * (np.arange(20).reshape(5, 4) % 4 - 1.5)
C = A @ B
out['mm_re'] = lua(C.real); out['mm_im'] = lua(C.imag)
out['mm_sum_dim1_re'] = lua(C.sum(0).real); out['mm_sum_dim1_im'] = lua(C.sum(0).imag)

for k, v in out.items():
    print("  %s = %s," % (k, v))
