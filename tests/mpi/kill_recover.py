"""kill -9 of a random process of the MPI job at KILLS random points of a script's run under
`mpirun -n NP tapestry SCRIPT`: each time the driver relaunches the job and restores the stored
tensors, and the run ends with status 0 and the same output lines (losses) as an unkilled run.
    kill_recover.py MPIRUN TAPESTRY SCRIPT NP KILLS SEED [PATTERN]
PATTERN (a regex, default "loss") picks the lines that must equal the unkilled run's.
Prints each kill's time and victim, and how long each recovery took.
"""
import os
import random
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job_ranks import job_ranks  # noqa: E402

mpirun, tapestry, script, np_, kills, seed = sys.argv[1:7]
pattern = re.compile(sys.argv[7] if len(sys.argv) > 7 else "loss")
np_, kills, rng = int(np_), int(kills), random.Random(int(seed))
cmd = [mpirun, "-n", str(np_), tapestry, script]


def lines(out):
    return [l for l in out.splitlines() if pattern.search(l) and " ms/step" not in l]


def driver_of(launcher):
    """The driver: the launcher's child with rank 0 of the outer job and no TAPESTRY_JOB."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != launcher:
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK=0" in env and not any(v.startswith(b"TAPESTRY_JOB=") for v in env):
            return int(entry)
    return None


t0 = time.time()
clean = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
clean_s = time.time() - t0
if clean.returncode != 0:
    sys.exit(f"FAIL: the unkilled run failed ({clean.returncode})\n{clean.stdout}\n{clean.stderr}")
want = lines(clean.stdout)
print(f"unkilled run: {clean_s:.1f} s, {len(want)} compared lines")

t0 = time.time()
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
done, victims = 0, []
driver = None
while done < kills and proc.poll() is None:
    driver = driver or driver_of(proc.pid)
    ranks = job_ranks(driver) if driver else {}
    if len(ranks) < np_ or any(pid in ranks.values() for _, pid in victims):
        time.sleep(0.1)
        continue
    # Kills fall in the first half of the unkilled run's length: on a shared machine the killed run
    # can go 2x faster than the unkilled one did and end before its last kill.
    time.sleep(rng.uniform(0.1, max(0.2, clean_s / (2 * (kills + 1)))))
    ranks = job_ranks(driver)
    if len(ranks) < np_ or proc.poll() is not None:
        continue
    rank = rng.randrange(np_)
    os.kill(ranks[rank], signal.SIGKILL)
    victims.append((rank, ranks[rank]))
    print(f"kill {done + 1}: rank {rank} (pid {ranks[rank]}) at {time.time() - t0:.1f} s")
    done += 1
try:
    out, err = proc.communicate(timeout=600)
except subprocess.TimeoutExpired:
    proc.kill()
    out, err = proc.communicate()
took = time.time() - t0
print(f"--- stdout\n{out}--- stderr\n{err}")
print(f"killed run: {took:.1f} s, {done} kill(s)")
if proc.returncode != 0:
    sys.exit(f"FAIL: exit status {proc.returncode}")
if done < kills:
    sys.exit(f"FAIL: the run ended after {done} of {kills} kills")
got = lines(out)
if got != want:
    sys.exit("FAIL: the killed run's lines differ:\n" + "\n".join(f"{a!r} / {b!r}" for a, b in zip(want, got)
                                                                if a != b))
relaunches = err.count("relaunching")
if relaunches < done:
    sys.exit(f"FAIL: {done} kills, {relaunches} relaunch notices")
print(f"ok: {done} kills, same {len(want)} lines")
