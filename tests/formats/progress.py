#!/usr/bin/env python3
"""The progress bar of a load or save: bytes done of the total and the rate, on stderr.

    progress.py TAPESTRY

A 4 MiB .npy served over loopback HTTP at 1.5 MiB/s (range_server.py with a rate) takes about
three seconds to load, so the bar (shown once an evaluation has run for a second) must appear:
with TAPESTRY_PROGRESS=1 (forced, as a terminal would have it) on one rank and on 3 virtual
ranks, and never in non-terminal output without it. Exits 77 (skipped) where no server starts."""
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "lua", "formats", "range_server.py")
BAR = re.compile(r"\] [\d.]+ (B|KiB|MiB) of 4\.0 MiB  [\d.]+ (B|KiB|MiB)/s  (ETA|elapsed) ")


def main():
    tapestry = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="tp-progress-") as d:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        env.pop("TAPESTRY_PROGRESS", None)
        subprocess.run([tapestry, "-e", f"tp.save(tp.ones{{1024, 1024}}, '{d}/p.npy')"], env=env, check=True)
        server = subprocess.Popen([sys.executable, SERVER, d, d + "/port", d + "/count", str(1.5 * 2**20)])
        try:
            for _ in range(100):
                if os.path.exists(d + "/port"):
                    break
                time.sleep(0.1)
            else:
                print("skipped: the range server did not start")
                sys.exit(77)
            url = "http://127.0.0.1:" + open(d + "/port").read() + "/p.npy"
            chunk = f"print(tp.load('{url}'):sum():item())"
            for label, extra, want in [("forced, one rank", {"TAPESTRY_PROGRESS": "1"}, True),
                                       ("forced, 3 ranks", {"TAPESTRY_PROGRESS": "1", "TAPESTRY_RANKS": "3"}, True),
                                       ("a pipe", {}, False)]:
                p = subprocess.run([tapestry, "-e", chunk], env=dict(env, **extra), capture_output=True, text=True,
                                   timeout=120)
                if p.returncode != 0 or "1048576" not in p.stdout:
                    sys.exit(f"{label}: the load failed ({p.returncode}): {p.stdout}{p.stderr}")
                shown = BAR.search(p.stderr) is not None
                if shown != want:
                    sys.exit(f"{label}: bar {'missing' if want else 'shown'}; stderr: {p.stderr!r}")
                print(f"{label}: {'a bar' if shown else 'no bar'}, as it should")
        finally:
            server.kill()


if __name__ == "__main__":
    main()
