#!/usr/bin/python3
"""Runs the tapestry binary once and checks its exit status, stdout and stderr.

usage: run_cli.py [--input TEXT | --input-file FILE] [--rc N] [--stdout TEXT] [--stdout-has TEXT]...
                  [--stderr-has TEXT]... [--stderr-empty] -- TAPESTRY [ARGS...]
TEXT may hold \\n and \\t escapes. --input is piped to stdin (default: nothing);
--stdout is compared exactly. History is off (TAPESTRY_HISTORY=""), so the test
touches nothing outside its own process.
"""
import argparse
import os
import subprocess
import sys


def unescape(s):
    return s.replace("\\n", "\n").replace("\\t", "\t")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--input", default="")
    p.add_argument("--input-file", help="pipe this file to stdin instead of --input")
    p.add_argument("--rc", type=int, default=0)
    p.add_argument("--stdout")
    p.add_argument("--stdout-has", action="append", default=[])
    p.add_argument("--stderr-has", action="append", default=[])
    p.add_argument("--stderr-empty", action="store_true")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    env = dict(os.environ, TAPESTRY_HISTORY="")
    data = open(a.input_file, "rb").read() if a.input_file else unescape(a.input).encode()
    r = subprocess.run(command, input=data, capture_output=True,
                       env=env, timeout=120)
    out, err = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
    problems = []
    if r.returncode != a.rc:
        problems.append(f"exit status {r.returncode}, wanted {a.rc}")
    if a.stdout is not None and out != unescape(a.stdout):
        problems.append(f"stdout is {out!r}, wanted {unescape(a.stdout)!r}")
    for s in a.stdout_has:
        if unescape(s) not in out:
            problems.append(f"stdout lacks {unescape(s)!r}")
    for s in a.stderr_has:
        if unescape(s) not in err:
            problems.append(f"stderr lacks {unescape(s)!r}")
    if a.stderr_empty and err:
        problems.append("stderr is not empty")
    if problems:
        print("command:", command)
        print("input:", repr(unescape(a.input)))
        print("--- stdout\n" + out + "--- stderr\n" + err + "---")
        for m in problems:
            print("FAIL:", m)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
