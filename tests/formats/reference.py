#!/usr/bin/env python3
"""Files written by the reference tools load in Tapestry with equal values, and files Tapestry
writes read back equal in those tools.

    reference.py TAPESTRY FORMAT LAUNCH     LAUNCH: one | ranks3 | mpi2 (mpirun -n 2, MPIEXEC)

For FORMAT it writes reference files and the values they hold (as .npy, which tp.load reads)
into a temporary folder, runs formats.lua FORMAT DIR in tapestry (which checks what it loads
and writes out.* files from the same values), then reads out.* back with the reference tool.
safetensors files are built by hand (struct + json), as the format's spec describes; CSV with
Python's csv module, SQLite with its sqlite3 module,
HDF5 with h5py, zarr with the zarr package.
"""
import csv
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ST_NAMES = {np.dtype("float32"): "F32", np.dtype("float64"): "F64", np.dtype("int32"): "I32",
            np.dtype("int64"): "I64", np.dtype("bool"): "BOOL"}
ST_TYPES = {v: k for k, v in ST_NAMES.items()}


def values():
    rng = np.random.default_rng(7)
    return {
        "layer.0.weight": rng.standard_normal((37, 5)).astype(np.float32),
        "bias": rng.standard_normal(11),
        "idx": np.arange(-20, 40, dtype=np.int64).reshape(6, 10),
        "counts": rng.integers(-1000, 1000, size=(4, 3, 2)).astype(np.int32),
        "mask": rng.random((9, 4)) > 0.5,
        "scale": np.array(0.125),
    }


# ---- safetensors -------------------------------------------------------------------------

def write_safetensors(path, tensors, meta):
    header, blobs, off = {}, [], 0
    for k, a in tensors.items():
        b = np.ascontiguousarray(a).tobytes()
        header[k] = {"dtype": ST_NAMES[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = meta
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    out = {}
    ends = []
    for k, e in header.items():
        b, end = e["data_offsets"]
        ends.append((b, end))
        out[k] = np.frombuffer(body[b:end], dtype=ST_TYPES[e["dtype"]]).reshape(e["shape"])
    # The spec: the data is exactly the tensors, back to back, with no holes.
    ends.sort()
    assert ends[0][0] == 0 and ends[-1][1] == len(body), ends
    assert all(a[1] == b[0] for a, b in zip(ends, ends[1:])), ends
    assert (8 + n) % 8 == 0, "the data starts 8-byte aligned"
    return out, meta


def make_safetensors(d):
    v = values()
    write_safetensors(os.path.join(d, "ref.safetensors"), v, {"format": "pt", "note": "hand-built"})
    for k, a in v.items():
        np.save(os.path.join(d, "want." + k + ".npy"), a)


def check_safetensors(d):
    got, meta = read_safetensors(os.path.join(d, "out.safetensors"))
    want = values()
    assert sorted(got) == sorted(want), sorted(got)
    for k, a in want.items():
        assert got[k].dtype == a.dtype and got[k].shape == a.shape, (k, got[k].dtype, got[k].shape)
        assert np.array_equal(got[k], a), k
    assert meta == {"writer": "tapestry"}, meta


# ---- CSV / TSV ----------------------------------------------------------------------------

def csv_table():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((23, 3))
    x[4, 1] = np.nan
    return x, np.arange(-10, 13, dtype=np.int64)


def make_csv(d):
    x, k = csv_table()
    with open(os.path.join(d, "ref.csv"), "w", newline="") as f:
        w = csv.writer(f)  # quotes the names with commas, ends lines with \r\n
        w.writerow(["label, text", "a", "b", "c", "k"])
        for i in range(len(k)):
            w.writerow([f"row {i}"] + ["" if np.isnan(v) else repr(float(v)) for v in x[i]] + [int(k[i])])
    with open(os.path.join(d, "ref.tsv"), "w", newline="") as f:
        w = csv.writer(f, delimiter="\t")
        for i in range(len(k)):
            w.writerow([int(k[i]), repr(float(x[i, 0]))])
    np.save(os.path.join(d, "want.x.npy"), x)
    np.save(os.path.join(d, "want.k.npy"), k)


def check_csv(d):
    x, k = csv_table()
    with open(os.path.join(d, "out.csv"), newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["c", "a, \"b\"", "k"], rows[0]
    got = np.array([[float(v) for v in r] for r in rows[1:]])
    want = np.stack([x[:, 2], x[:, 0], k.astype(np.float64)], axis=1)
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    with open(os.path.join(d, "out.tsv"), newline="") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    assert [int(r[0]) for r in rows] == list(k), rows


# ---- SQLite -----------------------------------------------------------------------------

def sql_table():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(17)
    x[[2, 9]] = np.nan  # stored as NULL
    return np.arange(100, 117, dtype=np.int64), x


def make_sql(d):
    ids, x = sql_table()
    con = sqlite3.connect(os.path.join(d, "ref.db"))
    con.execute("CREATE TABLE m (id INTEGER, label TEXT, x REAL)")
    con.executemany("INSERT INTO m VALUES (?, ?, ?)",
                    [(int(i), f"item {i}", None if np.isnan(v) else float(v)) for i, v in zip(ids, x)])
    con.execute("CREATE TABLE guard (a REAL CHECK (a < 5), b REAL)")
    con.execute("INSERT INTO guard VALUES (1, 2)")
    con.commit()
    con.close()
    np.save(os.path.join(d, "want.ids.npy"), ids)
    np.save(os.path.join(d, "want.x.npy"), x)


def check_sql(d):
    ids, x = sql_table()
    con = sqlite3.connect(os.path.join(d, "ref.db"))
    got = con.execute("SELECT k FROM out_ids ORDER BY rowid").fetchall()
    assert [r[0] for r in got] == list(ids) and all(type(r[0]) is int for r in got), got
    got = con.execute("SELECT k, value FROM out ORDER BY rowid").fetchall()
    assert [r[0] for r in got] == [float(i) for i in ids], got
    vals = np.array([np.nan if r[1] is None else r[1] for r in got])
    assert np.array_equal(vals, x, equal_nan=True), (vals, x)
    assert con.execute("SELECT * FROM guard").fetchall() == [(1.0, 2.0)], "a failed append changed the table"
    con.close()


# ---- HDF5 -------------------------------------------------------------------------------

def hdf5_values():
    rng = np.random.default_rng(11)
    return {
        "chunked": rng.standard_normal((41, 7)).astype(np.float32),  # chunked + gzip
        "contig": np.arange(-30, 30, dtype=np.int64).reshape(12, 5),  # contiguous: read raw
        "flags": rng.random((13, 2)) > 0.5,
        "narrow": np.arange(-8, 8, dtype=np.int16).reshape(4, 4),    # converted: loads as i32
        "big_endian": np.linspace(0, 1, 9).astype(">f8"),              # converted: loads as f64
    }


def make_hdf5(d):
    import h5py
    v = hdf5_values()
    with h5py.File(os.path.join(d, "ref.h5"), "w") as f:
        c = f.create_dataset("grp/chunked", data=v["chunked"], chunks=(5, 3), compression="gzip")
        c.attrs["units"] = "K"
        c.attrs["step"] = 10
        c.attrs["origin"] = [0.5, -1.5]
        f.create_dataset("contig", data=v["contig"])
        f.create_dataset("flags", data=v["flags"])
        f.create_dataset("narrow", data=v["narrow"])
        f.create_dataset("big_endian", data=v["big_endian"])
        # what Tapestry cannot load, for its errors
        f.create_dataset("strings", data=np.array([b"ab", b"cd"]))
        f.create_dataset("u64", data=np.arange(4, dtype=np.uint64))
    # A gzip-compressed dataset whose chunk for rows 21..30 is garbage: found by the read of a
    # slice that needs that chunk.
    with h5py.File(os.path.join(d, "damaged.h5"), "w") as f:
        f.create_dataset("x", data=np.arange(400.0).reshape(40, 10), chunks=(10, 10), compression="gzip")
        offset, size = f["x"].id.get_chunk_info(2).byte_offset, f["x"].id.get_chunk_info(2).size
    with open(os.path.join(d, "damaged.h5"), "r+b") as raw:
        raw.seek(offset)
        raw.write(b"\xff" * size)
    v["narrow"] = v["narrow"].astype(np.int32)  # what it loads as
    for k, a in v.items():
        np.save(os.path.join(d, "want." + k + ".npy"), a.astype(a.dtype.newbyteorder("=")))


def check_hdf5(d):
    import h5py
    v = hdf5_values()
    with h5py.File(os.path.join(d, "out.h5"), "r") as f:
        x = f["fields/u"]
        assert x.chunks is None and x.dtype == np.float32, (x.chunks, x.dtype)
        assert np.array_equal(x[:], v["chunked"] * 2), "contiguous f32"
        assert x.attrs["units"] == "K" and x.attrs["step"] == 10, dict(x.attrs)
        assert list(x.attrs["origin"]) == [0.5, -1.5], dict(x.attrs)
    with h5py.File(os.path.join(d, "out_chunked.h5"), "r") as f:
        x = f["c"]
        assert x.chunks == (4, 5) and x.dtype == np.int64, (x.chunks, x.dtype)
        assert np.array_equal(x[:], v["contig"]), "chunked i64"
    with h5py.File(os.path.join(d, "out_flags.h5"), "r") as f:
        assert f["flags"].dtype == np.bool_ and np.array_equal(f["flags"][:], v["flags"]), "bool"


# ---- zarr v2 -----------------------------------------------------------------------------

def zarr_values():
    rng = np.random.default_rng(13)
    return {
        "blosc": rng.standard_normal((29, 11)).astype(np.float32),
        "zstd_f": np.arange(-40, 30, dtype=np.int64).reshape(10, 7),
        "zlib": np.linspace(-1, 1, 12),
        "gzip": rng.integers(-100, 100, (6, 5, 4)).astype(np.int32),
        "flags": rng.random((13, 3)) > 0.5,
        "sparse": np.where(np.arange(10) < 4, 1.5, np.nan),
    }


def make_zarr(d):
    import numcodecs
    import zarr
    v = zarr_values()
    a = zarr.open(os.path.join(d, "blosc.zarr"), mode="w", shape=v["blosc"].shape, chunks=(4, 5), dtype="<f4",
                  compressor=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
    a[:] = v["blosc"]
    a.attrs.update({"units": "K", "step": 10, "origin": [0.5, -1.5]})
    zarr.open(os.path.join(d, "zstd_f.zarr"), mode="w", shape=(10, 7), chunks=(3, 3), dtype="<i8",
              compressor=numcodecs.Zstd(3), order="F")[:] = v["zstd_f"]
    zarr.open(os.path.join(d, "zlib.zarr"), mode="w", shape=(12,), chunks=(5,), dtype="<f8",
              compressor=numcodecs.Zlib(1))[:] = v["zlib"]
    g = zarr.open(os.path.join(d, "gzip.zarr"), mode="w", shape=(6, 5, 4), chunks=(4, 2, 3), dtype="<i4",
                  compressor=numcodecs.GZip(5), dimension_separator="/")
    g[:] = v["gzip"]
    zarr.open(os.path.join(d, "flags.zarr"), mode="w", shape=(13, 3), chunks=(5, 2), dtype="|b1",
              compressor=None)[:] = v["flags"]
    s = zarr.open(os.path.join(d, "sparse.zarr"), mode="w", shape=(10,), chunks=(4,), dtype="<f8",
                  fill_value=np.nan)
    s[:4] = 1.5  # chunks 2 and 3 are never written: they hold the fill value
    for k, a in v.items():
        np.save(os.path.join(d, "want." + k + ".npy"), a)


def check_zarr(d, ranks):
    import zarr
    v = zarr_values()
    # Without opts.chunks the grid follows the ranks' rows: 29 rows split 10/10/9 or 15/14.
    rows = -(-29 // ranks)
    for name, comp, chunks in [("zstd", "Zstd", (5, 11)), ("zlib", "Zlib", (8, 3)), ("gzip", "GZip", (rows, 11)),
                               ("blosc", "Blosc", (7, 7)), ("none", None, (rows, 11))]:
        z = zarr.open(os.path.join(d, f"out_{name}.zarr"), mode="r")
        assert type(z.compressor).__name__ == comp if comp else z.compressor is None, (name, z.compressor)
        assert z.chunks == chunks, (name, z.chunks)
        assert np.array_equal(z[:], v["blosc"] * 2), name
    z = zarr.open(os.path.join(d, "out_zstd.zarr"), mode="r")
    assert dict(z.attrs) == {"units": "K", "step": 10, "origin": [0.5, -1.5]}, dict(z.attrs)
    f = zarr.open(os.path.join(d, "out_flags.zarr"), mode="r")
    assert f.dtype == np.bool_ and np.array_equal(f[:], v["flags"]), "bool"


# ---- driver -----------------------------------------------------------------------------

def run(tapestry, fmt, launch, d):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    cmd = [tapestry, os.path.join(HERE, "formats.lua"), fmt, d]
    if launch == "ranks3":
        env["TAPESTRY_RANKS"] = "3"
        env["TAPESTRY_VERIFY"] = "1"
    elif launch == "mpi2":
        cmd = [os.environ.get("MPIEXEC", "mpirun"), "-n", "2"] + cmd
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    print(p.stdout)
    if p.returncode != 0:
        sys.exit(f"tapestry failed ({p.returncode})")


def main():
    tapestry, fmt, launch = sys.argv[1:4]
    d = tempfile.mkdtemp(prefix=f"tp-{fmt}-")
    try:
        globals()["make_" + fmt](d)
        run(tapestry, fmt, launch, d)
        check = globals()["check_" + fmt]
        if fmt == "zarr":
            check(d, {"one": 1, "ranks3": 3, "mpi2": 2}[launch])
        else:
            check(d)
        print(f"{fmt} on {launch}: reference files load equal, tapestry's files read back equal")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
