// zarr v2 directory stores, read by boxes: each rank reads and decodes only the chunks its
// slices touch, whatever the store's chunk grid.
//   ZarrMeta m = read_zarr_meta("data.zarr");           // .zarray and .zattrs
//   read_zarr_box("data.zarr", m, box, out);              // the chunks overlapping box
//   save_zarr("out.zarr", value.view(), {64, 64}, {"zstd", 3}, attrs);   // a fresh store, swapped in
// Format: `.zarray` JSON {"zarr_format": 2, "shape", "chunks", "dtype": "<f4", "order": "C"|"F",
// "compressor": null | {"id": "zlib"|"gzip"|"zstd"|"blosc", ...}, "fill_value", "filters": null},
// `.zattrs` JSON, one file per chunk named "i.j" (or "i/j" with dimension_separator "/"); edge
// chunks are whole chunks; a missing chunk holds fill_value. Dtypes '<f4' '<f8' '<i4' '<i8' '|b1'.
// zlib and gzip come from zlib, zstd from libzstd, blosc from libblosc; JSON from nlohmann/json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/io/attrs.hpp"
#include "engine/ir/dtype.hpp"
#include "engine/ir/shape.hpp"
#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"

namespace tapestry::io {

struct ZarrCompressor {
  std::string id;  // "" (none), "zlib", "gzip", "zstd", "blosc"
  int level = 3;
  std::string cname = "lz4";  // blosc's inner compressor
  int shuffle = 1;            // blosc: 0 none, 1 byte, 2 bit
};

struct ZarrMeta {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<int64_t> chunks;
  bool fortran = false;
  ZarrCompressor compressor;
  double fill = 0;
  char separator = '.';
  Attrs attrs;
};

ZarrMeta read_zarr_meta(const std::string& dir);
// The same from the two JSON texts (`dir` names errors; zattrs may be empty).
ZarrMeta parse_zarr_meta(const std::string& dir, const std::string& zarray, const std::string& zattrs);

void read_zarr_box(const std::string& dir, const ZarrMeta& m, const poly::Box& box, const View& out);

// Writing, in pieces so that every rank writes the chunks it holds (engine/session/
// parallel_save.hpp):
//   check_zarr_dtype(path, dtype);                    // zarr has no code for bf16
//   bool old = check_zarr_replaceable(path);          // before anything is written
//   create_zarr(tmp, meta);                           // .zarray and .zattrs, no chunk yet
//   write_zarr_chunk(tmp, meta, chunk_box, part);     // each chunk once, by one process
//   commit_zarr(tmp, path, old);                      // swapped in whole
// A store we write is C order, fill_value 0, no filters, separator '.'.
// An Error naming `path` when zarr v2 has no dtype code for `t` (bf16).
void check_zarr_dtype(const std::string& path, DType t);
// Whether `path` holds a zarr array (true) or nothing (false); any other thing there is an Error.
bool check_zarr_replaceable(const std::string& path);
// A fresh folder `dir` (any earlier one removed) holding m's .zarray and .zattrs.
void create_zarr(const std::string& dir, const ZarrMeta& m);
// Chunk `box` of m's grid (a whole chunk, clipped to the shape) from `v` (box's extents, any
// strides), padded with zeros to a whole chunk as zarr writes the edges. `path` names errors.
void write_zarr_chunk(const std::string& dir, const ZarrMeta& m, const poly::Box& box, const View& v);
// Renames `tmp` to `path`, or exchanges them (renameat2) when `exists` and removes the old one.
void commit_zarr(const std::string& tmp, const std::string& path, bool exists);

// Writes `v` as a new store (C order, `chunks` one per dim) beside `path` and swaps it in: a
// failure leaves `path` as it was. Only an absent path or a zarr store (a folder holding
// .zarray) is replaced. One process writes every chunk.
void save_zarr(const std::string& path, const View& v, const std::vector<int64_t>& chunks,
               const ZarrCompressor& compressor, const Attrs& attrs);

}  // namespace tapestry::io
