"""W5 in numpy: einsum("ij,jk,kl->il") on 2048x64, 64x2048, 2048x64, optimize=True and False.

    /usr/bin/python3 bench/einsum/einsum_numpy.py [reps] [dtype] [naive_reps]  (7 float32 5)

Median of `reps` runs after one warm-up, fresh inputs each run (as bench/einsum/einsum.lua).
"""
import sys
import time

import numpy as np

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
dtype = sys.argv[2] if len(sys.argv) > 2 else "float32"
N, K = 2048, 64


def inputs(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((N, K)).astype(dtype),
            rng.standard_normal((K, N)).astype(dtype),
            rng.standard_normal((N, K)).astype(dtype))


def timed(f, reps):
    ts = []
    for r in range(reps + 1):
        a, b, c = inputs(1000 + r)
        t0 = time.perf_counter()
        f(a, b, c)
        if r > 0:
            ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


a, b, c = inputs(1)
path, info = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="optimal")
print(f"W5 {dtype} numpy {np.__version__}: path {path[1:]}")
t_opt = timed(lambda x, y, z: np.einsum("ij,jk,kl->il", x, y, z, optimize=True), reps)
print(f"np.einsum optimize=True   median {t_opt * 1e3:9.3f} ms over {reps} runs")
# The naive loop nest is ~5e10 flops (~45 s a run here): argument 3 sets its runs, 0 skips it.
naive_reps = min(reps, int(sys.argv[3]) if len(sys.argv) > 3 else 5)
if naive_reps == 0:
    sys.exit(0)
t_naive = timed(lambda x, y, z: np.einsum("ij,jk,kl->il", x, y, z, optimize=False), naive_reps)
print(f"np.einsum optimize=False  median {t_naive * 1e3:9.3f} ms over {naive_reps} runs")
