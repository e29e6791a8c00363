// HDF5 datasets, read and written by boxes so each rank touches only its own slices.
//   Hdf5Info i = read_hdf5_info("sim.h5", "/fields/u");     // dtype, shape, layout, attributes
//   read_hdf5_box("sim.h5", "/fields/u", box, out);          // a hyperslab: only its chunks are read
//   int64_t at = create_hdf5(tmp, "u", DType::F32, {100, 50}, attrs, {});   // contiguous: raw offset
// The HDF5 library (Debian's libhdf5-openmpi) does the work. A contiguous dataset that is not
// filtered and whose stored type is the native little-endian one is plain bytes at one offset
// in the file (Hdf5Info::raw_offset), so npy.hpp's box I/O reads and writes it with pread and
// pwrite: several processes can write their boxes of one file at once, which serial HDF5 does
// not allow. A chunked dataset we create is allocated whole at creation and unfiltered, so its
// chunks are plain bytes too, written the same way (write_hdf5_chunked_box). Every other dataset (chunked,
// compressed, big-endian, other integer and float widths, which HDF5 converts) is read by hyperslab through
// the library. Bools are h5py's enum {FALSE = 0, TRUE = 1} of int8. Every failure is an Error naming the file
// and dataset.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "engine/io/attrs.hpp"
#include "engine/ir/dtype.hpp"
#include "engine/ir/shape.hpp"
#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"

namespace tapestry::io {

using Hdf5Attr = Attr;

struct Hdf5Info {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<int64_t> chunks;  // empty: contiguous
  int64_t raw_offset = -1;      // where its bytes start when they can be read raw, else -1
  std::map<std::string, Hdf5Attr> attrs;
};

Hdf5Info read_hdf5_info(const std::string& path, const std::string& dataset);

// Reads the elements of `box` into `out` (shape = box extents, dtype info.dtype, any strides).
void read_hdf5_box(const std::string& path, const std::string& dataset, const poly::Box& box,
                   const View& out);

// Creates `path` (which must not exist: a temporary name) holding `dataset` (intermediate
// groups created) with `attrs`, its data allocated now and never filled. Without chunks the
// offset of its raw bytes is returned for write_npy_box; with chunks (one per dim), -1 and the
// data is written with write_hdf5_chunked_box.
int64_t create_hdf5(const std::string& path, const std::string& dataset, DType dtype, const Shape& shape,
                    const std::map<std::string, Hdf5Attr>& attrs, const std::vector<int64_t>& chunks);

// Writes `in` (box's extents, any strides) to the elements of `box` of a chunked dataset that
// create_hdf5 made: the library tells where each chunk lies, and each chunk's part of the box
// is written there raw with pwrite (chunks are unfiltered and native), so several processes
// may write their boxes of one file at once, even parts of one chunk.
void write_hdf5_chunked_box(const std::string& path, const std::string& dataset, const poly::Box& box,
                            const View& in);

// A new file holding `v` as `dataset`, written beside `path` and renamed over it (a failure
// leaves `path` as it was); only a regular file is replaced (check_replaceable).
void save_hdf5(const std::string& path, const std::string& dataset, const View& v,
               const std::map<std::string, Hdf5Attr>& attrs, const std::vector<int64_t>& chunks);

}  // namespace tapestry::io
