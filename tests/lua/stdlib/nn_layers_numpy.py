# Prints the numpy values that tests/lua/stdlib/nn_layers.lua pastes in:
#   /usr/bin/python3 tests/lua/stdlib/nn_layers_numpy.py
# Inputs are v(shape, a, b): element i (row-major, from 0) is ((i*a) % b - b//2) / 4, which the
# Lua test builds the same way. References are naive loops (torch's definitions, 0-based here).
import numpy as np

def v(shape, a=7, b=11):
    n = int(np.prod(shape))
    i = np.arange(n)
    return (((i * a) % b) - b // 2).astype(np.float64).reshape(shape) / 4

def lua(a):
    a = np.asarray(a)
    if a.ndim == 0:
        return repr(float(a))
    return "{" + ", ".join(lua(x) for x in a) + "}"

def conv(x, w, stride, pad, dil, groups):
    # x {N,C,S...}, w {O,C/g,K...}, pad a list of (before, after) per spatial dim.
    k = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pad])
    N, C = x.shape[:2]
    O, Cg = w.shape[:2]
    K = w.shape[2:]
    out_sp = [(x.shape[2 + d] - dil[d] * (K[d] - 1) - 1) // stride[d] + 1 for d in range(k)]
    y = np.zeros([N, O] + out_sp)
    og = O // groups
    for n in range(N):
        for o in range(O):
            g = o // og
            for pos in np.ndindex(*out_sp):
                s = 0.0
                for c in range(Cg):
                    for kk in np.ndindex(*K):
                        idx = tuple(pos[d] * stride[d] + kk[d] * dil[d] for d in range(k))
                        s += x[(n, g * Cg + c) + idx] * w[(o, c) + kk]
                y[(n, o) + pos] = s
    return y

out = {}
x1 = v([2, 3, 7]); w1 = v([4, 3, 3], 5, 7); b1 = v([4], 3, 5)
out['c1_plain'] = conv(x1, w1, [1], [(0, 0)], [1], 1) + b1[None, :, None]
out['c1_sdp'] = conv(x1, w1, [2], [(2, 2)], [2], 1)
w1g = v([6, 1, 3], 5, 7)
out['c1_groups'] = conv(x1, w1g, [1], [(1, 1)], [1], 3)
w1e = v([2, 3, 4], 5, 7)
out['c1_same'] = conv(x1, w1e, [1], [(1, 2)], [1], 1)   # total 3: 1 before, 2 after
x2 = v([1, 2, 5, 6]); w2 = v([3, 2, 2, 3], 5, 7); b2 = v([3], 3, 5)
out['c2_same'] = conv(x2, w2, [1, 1], [(0, 1), (1, 1)], [1, 1], 1) + b2[None, :, None, None]
x3 = v([2, 2, 5, 4, 4]); w3 = v([3, 2, 3, 2, 3], 5, 7)
out['c3_a'] = conv(x3, w3, [2, 1, 2], [(1, 1), (0, 0), (1, 1)], [1, 1, 1], 1)
w3g = v([4, 1, 2, 2, 2], 5, 7)
out['c3_groups'] = conv(x3, w3g, [1, 1, 1], [(0, 0), (0, 0), (0, 0)], [2, 1, 1], 2)
out['c3_unbatched'] = conv(x3[:1], w3, [1, 1, 1], [(0, 0), (1, 1), (0, 0)], [1, 1, 1], 1)[0]

# Losses: logits {4, 5}, labels 1-based.
lg = v([4, 5])
lp = lg - lg.max(1, keepdims=True); lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
y = np.array([3, 1, 5, 2]) - 1
wc = np.array([1.0, 2.0, 0.5, 1.5, 3.0])
pick = -lp[np.arange(4), y]
out['nll_mean'] = pick.mean()
out['nll_sum'] = pick.sum()
out['nll_w_mean'] = (pick * wc[y]).sum() / wc[y].sum()
valid = y != 0                                       # ignore_index = 1 (1-based)
out['nll_ignore_w'] = (pick * wc[y] * valid).sum() / (wc[y] * valid).sum()
out['nll_ignore_none'] = np.where(valid, pick, 0)
# {N, C, d}: logits {2, 3, 4}, labels {2, 4}.
lg3 = v([2, 3, 4], 5, 13)
lp3 = lg3 - lg3.max(1, keepdims=True); lp3 = lp3 - np.log(np.exp(lp3).sum(1, keepdims=True))
y3 = np.array([[1, 3, 2, 2], [3, 3, 1, 2]]) - 1
out['nll3'] = -np.take_along_axis(lp3, y3[:, None, :], 1)[:, 0, :].mean()
tprob = np.abs(v([4, 5], 3, 7)); tprob = tprob / tprob.sum(1, keepdims=True)
out['ce_prob_w_sum'] = (-(tprob * lp * wc[None, :]).sum(1)).sum()

# batchnorm of x {3, 2, 4}: channels dim 2.
xb = v([3, 2, 4], 5, 9)
m = xb.mean((0, 2)); var = xb.var((0, 2)); n = 12
out['bn_train'] = (xb - m[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5)
gam = np.array([1.5, -0.5]); bet = np.array([0.25, 1.0])
out['bn_affine'] = out['bn_train'] * gam[None, :, None] + bet[None, :, None]
rm0 = np.array([0.5, -1.0]); rv0 = np.array([2.0, 0.5])
out['bn_rm'] = 0.9 * rm0 + 0.1 * m
out['bn_rv'] = 0.9 * rv0 + 0.1 * var * n / (n - 1)
out['bn_eval'] = (xb - rm0[None, :, None]) / np.sqrt(rv0[None, :, None] + 1e-3)

for k, a in out.items():
    print("  %s = %s," % (k, lua(a)))
