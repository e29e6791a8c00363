#!/usr/bin/python3
"""The objects of vector_kernels.cpp, one per instruction set, define no symbol outside their own
namespace (tapestry::cpu::vec::<variant>). A header's inline function compiled into one of them and
not inlined would be a weak symbol both share, and the linker could keep the AVX-512 copy for a CPU
without AVX-512. Usage: isa_symbols.py OBJECT...  (the variant is the object's directory name)."""
import re
import subprocess
import sys

bad = []
for obj in sys.argv[1:]:
    variant = re.search(r"tapestry_kernels_vec_(\w+)\.dir", obj).group(1)
    out = subprocess.run(["nm", "-C", "--defined-only", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2]
        if kind.islower() and kind not in "uvw":  # local to the object
            continue
        if f"tapestry::cpu::vec::{variant}::" not in name:
            bad.append(f"{obj}: {kind} {name}")
print("\n".join(bad) if bad else f"ok: {len(sys.argv) - 1} objects")
sys.exit(1 if bad else 0)
