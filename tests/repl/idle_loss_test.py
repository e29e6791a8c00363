#!/usr/bin/python3
"""An idle interactive shell shows a lost process of its MPI job within 5 s.

usage: idle_loss_test.py TAPESTRY_BINARY JOB_RANKS_PY
Starts `tapestry -n 3` at a terminal (the process is the driver: engine/dist/remote_job.hpp),
stores a named tensor, then kill -9s rank 2 of the job while the prompt waits for input: the
notice naming the rank must appear with nothing typed, within 5 s. The next line typed reads
the tensor back equal (the job was relaunched and restored), and Ctrl-D leaves with status 0.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pty_test import Session, fail  # noqa: E402

PROMPT = r"tapestry\[3 ranks\]> "


def job_ranks(script, driver):
    out = subprocess.run([sys.executable, script, str(driver)], capture_output=True, text=True).stdout
    return {int(r): int(p) for r, p in (line.split() for line in out.splitlines() if line.strip())}


def main():
    binary, ranks_py = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    home = tempfile.mkdtemp(prefix="tapestry-idle-loss-")
    env = dict(os.environ, TERM="xterm", HOME=home, TAPESTRY_HISTORY="")
    env.pop("TAPESTRY_PROGRESS", None)
    s = Session(binary, env, ["-n", "3"])
    s.expect(r"Type :help", "banner")
    s.line("tp.env.w = tp.rand({300, 200}, {seed = 3})\r", "the prompt naming the mesh", PROMPT)
    s.line("string.format('%.4f', (tp.env.w * 1):sum():item())\r", "prompt", PROMPT)
    before = s.expect(r"\n'?(\d+\.\d{4})'?\r?\n", "the sum of w").group(1)
    s.prompt("prompt before the kill", PROMPT)
    ranks = job_ranks(ranks_py, s.pid)
    if 2 not in ranks:
        fail(f"no rank 2 in the job of driver {s.pid}: {ranks}")
    t0 = time.time()
    os.kill(ranks[2], signal.SIGKILL)
    s.expect(r"tapestry: rank 2 \(pid \d+[^)]*\) died[^\n]*relaunched", "the notice at an idle prompt")
    took = time.time() - t0
    print(f"notice {took:.1f} s after the kill")
    if took > 5:
        fail(f"the notice came {took:.1f} s after the kill (at most 5 s)")
    s.send("string.format('%.4f', (tp.env.w * 2):sum():item() / 2)\r")
    after = s.expect(r"\n'?(\d+\.\d{4})'?\r?\n", "the sum of w after the loss").group(1)
    if after != before:
        fail(f"w sums to {after} after the loss, {before} before")
    s.line("tp.stats().job_relaunches\r", "prompt", PROMPT)
    s.expect(r"\n1\r?\n", "one relaunch")
    s.line("\x04", "prompt before Ctrl-D", PROMPT)
    code = s.wait_exit("Ctrl-D")
    if code != 0:
        fail(f"Ctrl-D: exit status {code}, wanted 0")
    print("ok")


if __name__ == "__main__":
    main()
