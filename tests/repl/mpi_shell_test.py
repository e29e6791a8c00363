#!/usr/bin/python3
"""The interactive shell on the whole allocation, through a pseudo-terminal.

usage: mpi_shell_test.py (mpirun MPIRUN | dash-n) TAPESTRY_BINARY
Starts `MPIRUN -n 2 tapestry` or `tapestry -n 2` at a terminal, as a person would, and checks
that rank 0 owns it: the banner and the prompt naming the mesh, Ctrl-C at an idle prompt
dropping the line, the progress bar of a long evaluation, Ctrl-C cancelling it on every rank
with tp.env intact, tables shown readably, Ctrl-D leaving with status 0; then that os.exit(3)
at the prompt exits 3 through the launcher.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pty_test import LONG, Session, fail  # noqa: E402

PROMPT = r"tapestry\[2 ranks\]> "


def start(launcher, binary, env):
    if launcher[0] == "mpirun":
        return Session(launcher[1], env, ["-n", "2", binary])
    return Session(binary, env, ["-n", "2"])


def main():
    if sys.argv[1] == "mpirun":
        launcher, binary = ("mpirun", sys.argv[2]), os.path.abspath(sys.argv[3])
    else:
        launcher, binary = ("dash-n",), os.path.abspath(sys.argv[2])
    home = tempfile.mkdtemp(prefix="tapestry-mpi-pty-")
    env = dict(os.environ, TERM="xterm", HOME=home, TAPESTRY_HISTORY="")
    env.pop("TAPESTRY_PROGRESS", None)  # shown because rank 0 owns a terminal, not because forced

    s = start(launcher, binary, env)
    s.expect(r"Type :help", "banner")
    s.line("tp.env.keep = tp.full({4}, 7)\r", "the prompt naming the mesh", PROMPT)
    s.line("junk that is dropped", "prompt before Ctrl-C", PROMPT)
    s.send("\x03")
    s.expect(r"\^C\r?\n", "Ctrl-C at an idle prompt")
    s.line("'line' .. 'cleared'\r", "prompt after Ctrl-C", PROMPT)
    s.expect(r"\nlinecleared\r?\n", "the line after Ctrl-C")
    s.line("big = tp.rand{2000, 2000}\r", "prompt", PROMPT)
    s.line(LONG, "prompt before the long evaluation", PROMPT)
    s.expect(r"\] \d+/\d+ blocks .* moved", "the progress bar on rank 0's terminal")
    s.send("\x03")
    s.expect(r"evaluation cancelled \(interrupted\)", "Ctrl-C cancels the evaluation")
    s.line("tp.env.keep:sum():item()\r", "prompt after cancelling", PROMPT)
    s.expect(r"\n28\.0\r?\n", "tp.env kept its value after the cancel")
    s.line("(tp.ones{300, 300}:matmul(tp.ones{300, 300})):sum():item()\r", "prompt", PROMPT)
    s.expect(r"\n27000000\.0\r?\n", "both ranks work after the cancel")
    s.line("{ranks = tp.mesh().ranks, shape = big.shape}\r", "prompt", PROMPT)
    s.expect(r"\n\{ranks = 2, shape = \{2000, 2000\}\}\r?\n", "a table shown readably")
    s.line("\x04", "prompt before Ctrl-D", PROMPT)
    code = s.wait_exit("Ctrl-D")
    if code != 0:
        fail(f"Ctrl-D: exit status {code}, wanted 0")

    s = start(launcher, binary, env)
    s.line("os.exit(3)\r", "second session", PROMPT)
    code = s.wait_exit("os.exit(3)")
    if code != 3:
        fail(f"os.exit(3): exit status {code}, wanted 3")
    print("ok")


if __name__ == "__main__":
    main()
