"""The processes of the MPI job a tapestry driver launched, as "RANK PID" lines.
    job_ranks.py DRIVER_PID
A rank of a driver's job has TAPESTRY_JOB in its environment, naming the driver's pid
(engine/dist/head.hpp: "HOST PORT TOKEN DRIVER_PID DIR"). Zombies are left out.
"""
import os
import sys


def job_ranks(driver):
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state in "ZX":
            continue
        job = rank = None
        for var in env:
            if var.startswith(b"TAPESTRY_JOB="):
                job = var[len(b"TAPESTRY_JOB="):].decode().split()
            elif var.startswith(b"OMPI_COMM_WORLD_RANK="):
                rank = int(var.split(b"=")[1])
        if job and len(job) >= 4 and int(job[3]) == driver and rank is not None:
            found[rank] = int(entry)
    return found


if __name__ == "__main__":
    for rank, pid in sorted(job_ranks(int(sys.argv[1])).items()):
        print(rank, pid)
