"""Shared by the peer scripts: sizes, the timing loop and the RESULT line bench/run parses.

Same rules as bench/common.lua: inputs made before the clock, one warm-up, median of BENCH_REPS
(default 7) runs; BENCH_SMALL=1 picks tiny sizes and one run (a smoke test).
"""
import os
import statistics
import sys
import time

SMALL = os.environ.get("BENCH_SMALL") == "1"
REPS = int(os.environ.get("BENCH_REPS") or (1 if SMALL else 7))

# Sizes, as in the Lua scripts (docs/benchmarks.md).
W1_N = 256 if SMALL else 4096
W2_N = 1 << 12 if SMALL else 1 << 25
W3_N = 1 << 12 if SMALL else 1 << 26
W4_N, W4_STEPS = (64, 3) if SMALL else (4096, 50)
W5_N, W5_K = (64, 8) if SMALL else (2048, 64)
W6_N, W6_ITERS = 256, (20 if SMALL else 1000)
# CG: in f32 the residual can reach exactly 0 well before 1000 iterations; dividing by at least
# TINY keeps every engine's iterates finite (and the work the same) after that.
TINY = 1e-30
W7_WIDTH, W7_BATCH = (32, 32) if SMALL else (1024, 1024)


def timeit(setup, run, reps=REPS):
    """Median seconds of run(setup(i)) over `reps` runs after one warm-up; setup is untimed."""
    ts = []
    for i in range(reps + 1):
        inputs = setup(i)
        t0 = time.perf_counter()
        run(inputs)
        t = time.perf_counter() - t0
        if i > 0:
            ts.append(t)
    return statistics.median(ts)


def report(workload, who, seconds, note=""):
    print(f"RESULT {workload} {who} {seconds:.6g} {note}", flush=True)


def selected(all_ids):
    """Workloads named on the command line (W1 W3 ...), else all."""
    want = [a.upper() for a in sys.argv[1:]]
    return [w for w in all_ids if not want or w in want]
