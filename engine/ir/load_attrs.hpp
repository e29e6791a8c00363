// A box of an array in a file as a graph leaf: tp.load, load_hdf5, load_zarr and
// load_safetensors make one (engine/io/lazy_load.hpp), and nothing is read until an
// observation needs it. A plan reads it where it is read, as it generates rand: each rank reads
// exactly the slices its blocks need, so x[{1, {1, 10}}] of a 100 GB file reads kilobytes.
//   LoadAttrs a{LoadAttrs::Raw, "w.npy", "", 128, false, DType::F32, {4096, 4096}, {0, 0}, mtime, size};
//   NodeRef w = make_node(Op::Load, {}, a.encode(), {4096, 4096}, DType::F32);
//   read_load_box(a, {10, 0}, out);   // rows 11.. of the file into `out` (engine/io installs it)
// The file's modification time and size at load time are part of the node: a load of a file
// rewritten since is another node, and reading a file that changed under a node is an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/node.hpp"
#include "engine/ir/shape.hpp"
#include "engine/ir/value.hpp"

namespace tapestry {

struct LoadAttrs {
  // Raw: bytes at data_offset in C order, or Fortran order (.npy, safetensors, contiguous
  // HDF5); Hdf5: `dataset` through the HDF5 library (chunked, compressed); Zarr: the chunks of
  // the zarr v2 array in the directory `path`; Csv: rows of a text table (`extra` holds its
  // index, engine/io/csv.hpp).
  enum Format : uint8_t { Raw = 0, Hdf5 = 1, Zarr = 2, Csv = 3 };
  Format format = Raw;
  std::string path;
  std::string dataset;  // Hdf5 only
  int64_t data_offset = 0;
  bool fortran_order = false;
  DType dtype = DType::F32;
  Shape file_shape;             // the whole array in the file
  std::vector<int64_t> origin;  // where this node's first element lies in it (0-based)
  int64_t mtime_ns = 0;         // the file at load time (for a zarr store: its .zarray):
  int64_t file_bytes = 0;       // time stamps can be coarser than two writes apart, and a
  int64_t inode = 0;            // file saved over is a new inode
  std::vector<int64_t> extra;   // what else a format needs to read a box (Csv: its index)
  Attrs encode() const;
  static LoadAttrs decode(const Attrs& a);
  bool operator==(const LoadAttrs&) const = default;
};

// Reads the box of node `a` whose first element is `lo` (relative to the node) and whose
// extents are out's shape into `out` (contiguous host memory of a's dtype). engine/io installs
// the reader; a user error names the file when it cannot be read or changed since it was loaded.
using LoadReader = void (*)(const LoadAttrs& a, const std::vector<int64_t>& lo, const View& out);
void install_load_reader(LoadReader r);
void read_load_box(const LoadAttrs& a, const std::vector<int64_t>& lo, const View& out);

}  // namespace tapestry
