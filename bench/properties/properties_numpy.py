"""numpy's side of the issue-25 benchmarks (docs/properties.md): the dense contraction
einsum("abij,ijcd->abcd") of two n^4 f32 tensors (antisymmetric in (a,b), (i,j), (c,d); numpy
cannot use that), and the dense product of a block-diagonal n x n matrix (t x t tiles) and a
dense one.

    /usr/bin/python3 bench/properties/properties_numpy.py [n_cc=32] [n_mm=2048] [reps=5]

Median of `reps` runs after one warm-up, as bench/properties/cc_antisym.lua and
bench/tile_matmul.lua.
"""
import sys
import time

import numpy as np

n_cc = int(sys.argv[1]) if len(sys.argv) > 1 else 32
n_mm = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
rng = np.random.default_rng(0)


def median(f):
    ts = []
    for r in range(reps + 1):
        t0 = time.perf_counter()
        f(r)
        if r > 0:
            ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def antisymmetric(n):
    x = rng.standard_normal((n, n, n, n), dtype=np.float32)
    x = x - x.transpose(1, 0, 2, 3)
    return x - x.transpose(0, 1, 3, 2)


a, b = antisymmetric(n_cc), antisymmetric(n_cc)
t = median(lambda r: np.einsum("abij,ijcd->abcd", a, b * np.float32(1 + r / 1000), optimize=True))
print(f"cc n={n_cc} numpy {np.__version__} einsum(optimize=True): median {t * 1e3:.3f} ms, "
      f"flops {2 * n_cc ** 6:.3g}")
t_tile = n_mm // 8
x = rng.standard_normal((n_mm, n_mm), dtype=np.float32)
x *= np.kron(np.eye(8, dtype=np.float32), np.ones((t_tile, t_tile), dtype=np.float32))
y = rng.standard_normal((n_mm, n_mm), dtype=np.float32)
t = median(lambda r: x @ (y * np.float32(1 + r / 1000)))
print(f"block-diagonal matmul n={n_mm} tiles={t_tile} numpy dense @: median {t * 1e3:.3f} ms, "
      f"flops {2 * n_mm ** 3:.3g}")
