#!/usr/bin/env python3
"""A 2 GiB HDF5 dataset sliced to 1 MiB reads about 1 MiB, without 2 GiB of disk.

    big_slice.py TAPESTRY LAUNCH     LAUNCH: one | ranks3

h5py writes two 2 GiB float32 datasets of shape {32768, 16384} with only rows 993..1040 holding
data: a chunked one ({16, 16384} chunks of 1 MiB, only the written chunks allocated) and a
contiguous one in its own file, which the file system keeps sparse. Tapestry loads each, reads
rows 1001..1016 (1 MiB) and checks their values, that tp.stats() counts 1 MiB read, and that the
process read (the kernel's rchar, /proc/self/io) under 2 MiB in all: the slice and the metadata.
Skipped (77) where the file system cannot keep the contiguous file sparse."""
import os
import subprocess
import sys
import tempfile

import numpy as np

ROWS, COLS = 32768, 16384  # 2 GiB of float32


def main():
    tapestry, launch = sys.argv[1:3]
    import h5py
    with tempfile.TemporaryDirectory(prefix="tp-big-") as d:
        slab = np.arange(48 * COLS, dtype=np.float32).reshape(48, COLS) % 1000
        with h5py.File(os.path.join(d, "chunked.h5"), "w") as f:
            f.create_dataset("x", shape=(ROWS, COLS), dtype="<f4", chunks=(16, COLS))[992:1040] = slab
        with h5py.File(os.path.join(d, "contig.h5"), "w") as f:
            f.create_dataset("x", shape=(ROWS, COLS), dtype="<f4")[992:1040] = slab
        for name in ("chunked.h5", "contig.h5"):
            st = os.stat(os.path.join(d, name))
            print(f"{name}: {st.st_size} bytes long, {st.st_blocks * 512} on disk")
            if st.st_blocks * 512 > 64 << 20:
                print("skipped: this file system does not keep the file sparse")
                sys.exit(77)
        want = float(slab[16:32].astype(np.float64).sum())
        chunk = f"""
local function rchar()
  for line in io.lines("/proc/self/io") do
    local n = line:match("^rchar: (%d+)")
    if n then return tonumber(n) end
  end
end
for _, name in ipairs({{"chunked.h5", "contig.h5"}}) do
  local x = tp.load_hdf5("{d}/" .. name, "x")
  assert(x.shape[1] == {ROWS} and x.shape[2] == {COLS}, "shape")
  local stats, os_before = tp.stats().bytes_read, rchar()
  local s = x[{{{{1009, 1024}}}}]:cast("f64"):sum():item()
  local read, os_read = tp.stats().bytes_read - stats, rchar() - os_before
  print(name, "sum", s, "tp.stats bytes_read", read, "rchar", os_read)
  assert(s == {want}, name .. ": the slice's values: " .. s)
  assert(read == 1048576, name .. ": tp.stats counts " .. read .. " bytes, not 1 MiB")
  assert(os_read < 2 * 1048576, name .. ": the process read " .. os_read .. " bytes")
  assert(x[{{{{20001, 20002}}}}]:sum():item() == 0, name .. ": rows never written hold the fill value")
end
"""
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        if launch == "ranks3":
            env["TAPESTRY_RANKS"] = "3"
        p = subprocess.run([tapestry, "-e", chunk], env=env, capture_output=True, text=True, timeout=300)
        print(p.stdout, p.stderr)
        if p.returncode != 0:
            sys.exit(f"tapestry failed ({p.returncode})")


if __name__ == "__main__":
    main()
