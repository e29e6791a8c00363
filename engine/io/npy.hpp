// NumPy .npy files, read and written by boxes so that each rank touches only its own slices.
//   auto v = load_npy("w.npy");                       // whole file -> a contiguous Value
//   NpyHeader h = read_npy_header("w.npy");  read_npy_box("w.npy", h, box, out);  // one slice
//   NpyHeader h = write_npy_header("o.npy", DType::F32, {4, 5});  write_npy_box("o.npy", h, box, v);
// Format: magic "\x93NUMPY", version, a little-endian header length, then a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (4, 5), } padded with spaces and '\n' so the
// data starts at a multiple of 64 bytes. We write version 1.0 (2.0 only if the header needs it)
// and read 1.0, 2.0 and 3.0. Dtypes: '<f4' '<f8' '<i4' '<i8' '|b1', little-endian only.
// Fortran-order files are read (the box is read transposed); we always write C order.
// Every failure is a tapestry::Error whose message starts with the quoted path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/ir/dtype.hpp"
#include "engine/ir/shape.hpp"
#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"

namespace tapestry::io {

struct NpyHeader {
  DType dtype = DType::F32;
  Shape shape;                 // {} for a 0-d array (a scalar); every size positive
  bool fortran_order = false;  // column-major data (read only)
  int64_t data_offset = 0;     // where the data starts (a multiple of 64 for files we write)
  int64_t data_bytes() const;  // numel(shape) * dtype size; checked against overflow on read
};

// The header a file of this dtype and shape gets from us (pure: every rank can compute it).
NpyHeader make_npy_header(DType dtype, const Shape& shape);
// The header bytes (magic through padding) of make_npy_header(dtype, shape).
std::string npy_header_bytes(DType dtype, const Shape& shape);

// Reads and validates the header: magic, version, dict, dtype, shape, and that the file is
// long enough for the data.
NpyHeader read_npy_header(const std::string& path);

// Reads the elements of `box` (a box of h.shape) into `out` (shape = box extents, dtype
// h.dtype, any strides): one pread per contiguous run of the file.
void read_npy_box(const std::string& path, const NpyHeader& h, const poly::Box& box, const View& out);

// Creates or truncates `path` and writes the header, sizing the file for all its data, so
// that ranks can then write their boxes concurrently. Returns the header to pass on.
// fresh: the file must not exist yet, and a link there is not followed (a temporary name).
NpyHeader write_npy_header(const std::string& path, DType dtype, const Shape& shape, bool fresh = false);

// Throws Error unless `path` is absent or a regular file (lstat: a symbolic link, device, FIFO,
// socket or folder there is refused), so a save never replaces /dev/null or a link's target.
void check_replaceable(const std::string& path);

// Writes `in` (shape = box extents, dtype h.dtype, any strides) to the elements of `box`:
// one pwrite per contiguous run. The file must exist (write_npy_header).
void write_npy_box(const std::string& path, const NpyHeader& h, const poly::Box& box, const View& in);

// Whole-tensor helpers. save_npy writes a temporary file beside `path` and renames it, so
// `path` never holds a half-written array; it replaces only a regular file (check_replaceable).
std::shared_ptr<Value> load_npy(const std::string& path);
void save_npy(const std::string& path, const View& v);

}  // namespace tapestry::io
