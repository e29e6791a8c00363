"""The Dask Array peer for W1-W4 and W6 (docs/benchmarks.md; W5 has no dask figure there).
/usr/bin/python3 bench/peers/dask_bench.py [W1 ...]

Threaded scheduler (the default for arrays), chunks of ~1024 per dim (1-D: 2^20 elements).
Dask is lazy like Tapestry, so the timed region is building the graph plus .compute().
W6 runs fewer iterations (dask's per-task overhead makes 1000 take ~25 s) and is scaled to 1000.
"""
import math

import dask
import dask.array as da
import numpy as np

from common import TINY
from common import (SMALL, W1_N, W2_N, W3_N, W4_N, W4_STEPS, W6_ITERS, W6_N, report, selected,
                    timeit)

dask.config.set(scheduler="threads")
f32 = np.float32
rng = np.random.default_rng(0)
CH2 = 1024          # chunk per dim of a matrix
CH1 = 1 << 20       # chunk of a vector


def arr(x, chunks):
    """A dask array over an in-memory numpy array (the input is materialized before timing)."""
    return da.from_array(x, chunks=chunks)


def w1():
    n = W1_N
    w = arr(rng.standard_normal((n, n), dtype=f32) / f32(math.sqrt(n)), CH2)
    b = arr(rng.standard_normal(n, dtype=f32), CH2)
    report("W1", "dask", timeit(lambda i: arr(rng.standard_normal((n, n), dtype=f32), CH2),
                                lambda x: da.maximum(x @ w + b, 0).compute()), f"n={n}")


def w2():
    n = W2_N
    b, c = (arr(rng.standard_normal(n, dtype=f32), CH1) for _ in range(2))
    report("W2", "dask", timeit(lambda i: arr(rng.standard_normal(n, dtype=f32), CH1),
                                lambda a: da.tanh(a * b + c).compute()), f"n={n}")


def w3():
    n = W3_N
    report("W3", "dask", timeit(lambda i: arr(rng.standard_normal(n, dtype=f32), CH1),
                                lambda x: float(x.var().compute())), f"n={n}")


def w4():
    n, steps = W4_N, W4_STEPS

    def step(u):
        # The 5-point Laplacian with a zero boundary: map_overlap passes each chunk with a
        # one-cell halo from its neighbours (zeros at the edge of the grid).
        def lap(b):
            out = -4 * b
            out[1:, :] += b[:-1, :]
            out[:-1, :] += b[1:, :]
            out[:, 1:] += b[:, :-1]
            out[:, :-1] += b[:, 1:]
            return out
        return u + f32(0.1) * u.map_overlap(lap, depth=1, boundary=0)

    def run(u):
        for _ in range(steps):
            u = step(u).persist()   # like a solver that keeps its state each step
        return u.compute()

    report("W4", "dask", timeit(lambda i: arr(rng.random((n, n), dtype=f32), CH2), run),
           f"n={n} steps={steps}")


def w6():
    n = W6_N
    iters = W6_ITERS if SMALL else 50
    m = rng.standard_normal((n, n), dtype=f32)
    A = arr((m @ m.T / f32(n) + np.eye(n, dtype=f32)).astype(f32), 128)

    def cg(b):
        x = da.zeros(n, dtype=f32, chunks=128)
        r = p = b
        rr = float((r * r).sum().compute())
        for _ in range(iters):
            Ap = (A @ p).persist()
            alpha = rr / max(float((p * Ap).sum().compute()), TINY)
            x = (x + f32(alpha) * p).persist()
            r = (r - f32(alpha) * Ap).persist()
            rr_new = float((r * r).sum().compute())
            p = (r + f32(rr_new / max(rr, TINY)) * p).persist()
            rr = rr_new
        return x.compute()

    t = timeit(lambda i: arr(rng.standard_normal(n, dtype=f32), 128), cg,
               reps=1 if SMALL else 3)
    report("W6", "dask", t * W6_ITERS / iters, f"n={n} iters={iters} scaled to {W6_ITERS}")


for w in selected(["W1", "W2", "W3", "W4", "W6"]):
    globals()[w.lower()]()
