#!/usr/bin/env python3
"""Checks that every #include in the source tree points at the same folder or a folder below it.

The layers, lowest first, are the table of docs/architecture.md: a folder may use only the
folders listed before it. Prints each violation as `file:line: folder -> included folder` and
exits 1 when there is one. Usage: check_layers.py REPO_ROOT
"""
import os
import re
import sys

# Lowest first. A file belongs to the longest listed prefix of its path.
LAYERS = [
    "engine/ir",
    "engine/ir/build",
    "engine/ir/grad",
    "kernels",
    "engine/poly",
    "engine/telemetry",
    "engine/plan",
    "engine/comm",
    "engine/device",
    "engine/run",
    "engine/store",
    "engine/shard",
    "engine/io",
    "engine/dist",
    "engine/session",
    "stdlib",
    "lang",
    "repl",
]
SOURCES = (".cpp", ".hpp", ".cu", ".cuh", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    best = None
    for i, layer in enumerate(LAYERS):
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(layer) > len(LAYERS[best]):
                best = i
    return best


def main(root):
    bad = []
    checked = 0
    for top in ("engine", "kernels", "lang", "repl", "stdlib"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                mine = layer_of(path)
                if mine is None:
                    bad.append(f"{path}: in no layer (add its folder to the table)")
                    continue
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = layer_of(m.group(1))
                        checked += 1
                        if target is None:
                            continue  # a header of the same folder named relatively, or generated
                        if target > mine:
                            bad.append(f"{path}:{lineno}: {LAYERS[mine]} -> {LAYERS[target]} "
                                       f"({m.group(1)}): a folder may use only the folders below it")
    for b in bad:
        print(b)
    print(f"layering: {checked} includes checked, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
