"""kill -9 of rank 0 (the driver) under `tapestry -n 3 SCRIPT` or `tapestry serve -n 3`: the
workers notice and exit, and the whole job is gone within LIMIT seconds (it ran forever).
    kill_driver.py script|serve|driver TAPESTRY LIMIT
Modes script and serve run without a driver process (TAPESTRY_DRIVER=0, set by the test);
mode driver kills the driver of `tapestry -n 3 SCRIPT` (the process that keeps the Lua state and
launched the job, engine/dist/remote_job.hpp): its job is gone within LIMIT seconds.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

mode, tapestry, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] not in "ZX":
            out.append(int(entry))
    return out


def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def ranks(launcher):
    """{rank: pid} of the tapestry processes under the launcher's mpirun."""
    found = {}
    for mpirun in children(launcher):
        for pid in children(mpirun):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            for var in env:
                if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                    found[int(var.split(b"=")[1])] = pid
    return found


tmp = tempfile.mkdtemp()
if mode in ("script", "driver"):
    script = os.path.join(tmp, "idle.lua")
    with open(script, "w") as f:
        f.write("tp.env.w = tp.rand({64, 64}, {seed = 1})\n"
                "print(string.format('sum %.3f', tp.env.w:sum():item()))\n"
                "io.stdout:flush()\n"
                "os.execute('sleep 30')\n")
    cmd = [tapestry, "-n", "3", script]
else:
    cmd = [tapestry, "serve", "-n", "3", "--listen", "127.0.0.1:0", "--token", "k" * 24,
           "--port-file", os.path.join(tmp, "port")]
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
deadline = time.time() + 60
found = {}
while time.time() < deadline and len(found) < 3:
    time.sleep(0.2)
    found = ranks(proc.pid)
if len(found) < 3:
    proc.kill()
    sys.exit(f"FAIL: the job did not start 3 ranks: {found}")
time.sleep(2)  # past the start: the workers serve rank 0's commands
workers = [found[1], found[2]] if mode != "driver" else list(found.values())
os.kill(found[0] if mode != "driver" else proc.pid, signal.SIGKILL)
t0 = time.time()
if mode == "driver":
    # The script's `sleep 30` keeps the driver's output open: watch the job's processes instead.
    while time.time() - t0 < limit + 30 and any(running(w) for w in workers):
        time.sleep(0.1)
    took = time.time() - t0
    out, err = "", ""
    proc.stdout.close()
    proc.stderr.close()
else:
    try:
        out, err = proc.communicate(timeout=limit + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    took = time.time() - t0
alive = [w for w in workers if running(w)]
for w in alive:
    os.kill(w, signal.SIGKILL)
print(f"--- stdout\n{out}\n--- stderr\n{err}")
if alive:
    sys.exit(f"FAIL: workers {alive} still ran after the driver was killed")
if mode != "driver" and "the driver (rank 0" not in err:
    sys.exit("FAIL: no worker said the driver was gone")
if took > limit:
    sys.exit(f"FAIL: the job took {took:.1f} s to end (limit {limit} s)")
print(f"the job ended {took:.1f} s after the driver was killed")
