"""The numpy peer for W1-W6 (docs/benchmarks.md).  /usr/bin/python3 bench/peers/numpy_bench.py [W1 ...]

numpy evaluates eagerly, so a run is just the expression; inputs are made before timing.
BLAS threads: OpenBLAS's default (all cores); bench/run unsets OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE for this command only, so numpy's OpenBLAS picks its own (SkylakeX) kernels.
"""
import numpy as np

from common import TINY
from common import (REPS, W1_N, W2_N, W3_N, W4_N, W4_STEPS, W5_K, W5_N, W6_ITERS, W6_N, report,
                    selected, timeit)

f32 = np.float32
rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape, dtype=f32)


def w1():
    n = W1_N
    w, b = randn(n, n) / f32(np.sqrt(n)), randn(n)
    report("W1", "numpy", timeit(lambda i: randn(n, n),
                                 lambda x: np.maximum(x @ w + b, f32(0))), f"n={n}")


def w2():
    n = W2_N
    b, c = randn(n), randn(n)
    report("W2", "numpy", timeit(lambda i: randn(n), lambda a: np.tanh(a * b + c)), f"n={n}")


def w3():
    n = W3_N
    report("W3", "numpy", timeit(lambda i: randn(n), lambda x: float(x.var())), f"n={n}")


def laplacian5(u):
    """The 5-point Laplacian with a zero boundary (u is zero outside the grid)."""
    out = -4 * u
    out[1:, :] += u[:-1, :]
    out[:-1, :] += u[1:, :]
    out[:, 1:] += u[:, :-1]
    out[:, :-1] += u[:, 1:]
    return out


def w4():
    n, steps = W4_N, W4_STEPS

    def run(u):
        for _ in range(steps):
            u = u + f32(0.1) * laplacian5(u)
        return u

    report("W4", "numpy", timeit(lambda i: rng.random((n, n), dtype=f32), run),
           f"n={n} steps={steps}")


def w5():
    n, k = W5_N, W5_K
    report("W5", "numpy",
           timeit(lambda i: (randn(n, k), randn(k, n), randn(n, k)),
                  lambda t: np.einsum("ij,jk,kl->il", *t, optimize=True)), f"N={n} K={k}")


def cg(A, b, iters):
    """Textbook CG, a fixed number of iterations; two scalars come back to Python each time."""
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = float(r @ r)
    for _ in range(iters):
        Ap = A @ p
        alpha = rr / max(float(p @ Ap), TINY)
        x = x + f32(alpha) * p
        r = r - f32(alpha) * Ap
        rr_new = float(r @ r)
        p = r + f32(rr_new / max(rr, TINY)) * p
        rr = rr_new
    return x


def w6():
    n = W6_N
    m = randn(n, n)
    A = (m @ m.T / f32(n) + np.eye(n, dtype=f32)).astype(f32)
    report("W6", "numpy", timeit(lambda i: randn(n), lambda b: cg(A, b, W6_ITERS)),
           f"n={n} iters={W6_ITERS}")


for w in selected(["W1", "W2", "W3", "W4", "W5", "W6"]):
    globals()[w.lower()]()
