"""The PyTorch (CPU) peer for W1-W7 (docs/benchmarks.md).  /usr/bin/python3 bench/peers/torch_bench.py [W1 ...]

torch uses its default intra-op thread count (all cores: 2 here).
"""
import math

import torch
import torch.nn.functional as F

from common import TINY
from common import (W1_N, W2_N, W3_N, W4_N, W4_STEPS, W5_K, W5_N, W6_ITERS, W6_N, W7_BATCH,
                    W7_WIDTH, report, selected, timeit)

torch.manual_seed(0)


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float32)


def w1():
    n = W1_N
    w, b = randn(n, n) / math.sqrt(n), randn(n)
    report("W1", "torch", timeit(lambda i: randn(n, n), lambda x: torch.relu(x @ w + b)), f"n={n}")


def w2():
    n = W2_N
    b, c = randn(n), randn(n)
    report("W2", "torch", timeit(lambda i: randn(n), lambda a: torch.tanh(a * b + c)), f"n={n}")


def w3():
    n = W3_N
    report("W3", "torch", timeit(lambda i: randn(n), lambda x: x.var(unbiased=False).item()),
           f"n={n}")


def w4():
    n, steps = W4_N, W4_STEPS
    k = torch.tensor([[0., 1., 0.], [1., -4., 1.], [0., 1., 0.]]).reshape(1, 1, 3, 3)

    def run(u):
        u = u.reshape(1, 1, n, n)
        for _ in range(steps):
            u = u + 0.1 * F.conv2d(u, k, padding=1)   # zero padding = the zero boundary
        return u

    report("W4", "torch", timeit(lambda i: torch.rand(n, n), run), f"n={n} steps={steps}")


def w5():
    n, k = W5_N, W5_K
    report("W5", "torch", timeit(lambda i: (randn(n, k), randn(k, n), randn(n, k)),
                                 lambda t: torch.einsum("ij,jk,kl->il", *t)), f"N={n} K={k}")


def w6():
    n = W6_N
    m = randn(n, n)
    A = m @ m.T / n + torch.eye(n)

    def cg(b):
        x = torch.zeros_like(b)
        r, p = b.clone(), b.clone()
        rr = float(r @ r)
        for _ in range(W6_ITERS):
            Ap = A @ p
            alpha = rr / max(float(p @ Ap), TINY)
            x = x + alpha * p
            r = r - alpha * Ap
            rr_new = float(r @ r)
            p = r + (rr_new / max(rr, TINY)) * p
            rr = rr_new
        return x

    report("W6", "torch", timeit(lambda i: randn(n), cg), f"n={n} iters={W6_ITERS}")


def w7():
    width, batch, lr = W7_WIDTH, W7_BATCH, 0.01
    params = []
    for _ in range(4):
        params += [(randn(width, width) * math.sqrt(2 / width)).requires_grad_(),
                   torch.zeros(width, requires_grad=True)]

    def step(t):
        x, labels = t
        h = x
        for l in range(4):
            h = h @ params[2 * l] + params[2 * l + 1]
            if l < 3:
                h = torch.relu(h)
        loss = F.cross_entropy(h, labels)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= lr * g
        return loss.item()

    report("W7", "torch", timeit(lambda i: (randn(batch, width), torch.randint(0, width, (batch,))),
                                 step), f"width={width} batch={batch}")


for w in selected(["W1", "W2", "W3", "W4", "W5", "W6", "W7"]):
    globals()[w.lower()]()
