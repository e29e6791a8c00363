#!/usr/bin/python3
"""Runs a traced session of the tapestry binary and checks the trace file.

usage: trace_check.py --ranks N [--mpirun MPIEXEC] [--via command|function] -- TAPESTRY
The session (piped, so no prompts) starts a trace with `:trace FILE` or tp.trace(FILE),
runs a matmul and a fused map, and stops it. The file must parse as JSON (trace-event
format), hold "X" events for blocks on every rank (or single-rank kernels when N is 1),
the plan and run phases, and args naming the op, box and bytes.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def fail(message, out=""):
    print("FAIL:", message)
    if out:
        print(out)
    sys.exit(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--mpirun")
    p.add_argument("--via", choices=["command", "function"], default="command")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    binary = a.command[1:] if a.command[:1] == ["--"] else a.command
    folder = tempfile.mkdtemp(prefix="tapestry-trace-")
    path = os.path.join(folder, "run trace.json")  # a space: the argument may be quoted
    start = f':trace "{path}"' if a.via == "command" else f"tp.trace({path!r})"
    stop = ":trace off" if a.via == "command" else "print('stopped', tp.trace(nil))"
    session = "\n".join([
        start,
        "a = tp.rand{256, 256}",
        "print((a:matmul(a) + 1):sum():item() > 0)",
        "print((tp.exp(a) * 2 - 1):max():item() > 0)",
        stop,
        "print('after', tp.ones{2}:sum():item())",  # untraced work after the stop
    ]) + "\n"
    env = dict(os.environ, TAPESTRY_HISTORY="")
    command = list(binary)
    if a.mpirun:
        command = [a.mpirun, "-n", str(a.ranks)] + command
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,vader",
                   OMPI_MCA_oob_tcp_if_include="lo", OPENBLAS_NUM_THREADS="1", TAPESTRY_THREADS="1")
        env.pop("TAPESTRY_RANKS", None)
    else:
        env["TAPESTRY_RANKS"] = str(a.ranks)
    r = subprocess.run(command, input=session.encode(), capture_output=True, env=env, timeout=120)
    out = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    if r.returncode != 0:
        fail(f"exit status {r.returncode}", out)
    if "after\t2.0" not in out:
        fail("the session did not go on after the trace", out)
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"the trace is not valid JSON: {e}", out)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    for e in events:
        for key in ("name", "cat", "pid", "tid", "ts", "dur", "args"):
            if key not in e:
                fail(f"event lacks {key!r}: {e}")
        if e["dur"] < 0 or e["ts"] < 0:
            fail(f"negative time: {e}")
    cats = {(e["pid"], e["cat"]) for e in events}
    work = "block" if a.ranks > 1 else "kernel"
    for rank in range(a.ranks):
        if (rank, work) not in cats:
            fail(f"no {work} events on rank {rank}; have {sorted(cats)}")
    phases = {e["name"] for e in events if e["cat"] == "phase"}
    wanted = {"plan", "run"} if a.ranks > 1 else {"evaluate"}
    if not wanted <= phases:
        fail(f"phases {sorted(phases)}, wanted {sorted(wanted)}")
    sample = next(e for e in events if e["cat"] == work)
    if "bytes" not in sample["args"] or ("box" not in sample["args"] and "shape" not in sample["args"]):
        fail(f"a {work} event's args lack bytes and box: {sample}")
    if a.ranks > 1:
        if not any(e["cat"] in ("send", "recv", "combine", "output") for e in events):
            fail("no transfer, combine or output events")
        if not any(e["name"] == "matmul" for e in events if e["cat"] == "block"):
            fail("no matmul block")
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"}
    if names.get(0) != "rank 0":
        fail(f"process names {names}")
    print(f"ok: {len(events)} events on {a.ranks} rank(s)")


if __name__ == "__main__":
    main()
