#include "engine/io/lazy_load.hpp"

#include <unordered_set>

#include "engine/io/byte_source.hpp"
#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::io {

namespace {

// The file a load depends on (a zarr store's .zarray), as modification time and size.
std::string identity_file(const LoadAttrs& a) {
  return a.format == LoadAttrs::Zarr ? a.path + "/.zarray" : a.path;
}

void stamp(LoadAttrs& a) {
  const Stamp st = stamp_of(identity_file(a));  // a file, or a URL's Last-Modified and ETag
  a.mtime_ns = st.mtime_ns;
  a.file_bytes = st.bytes;
  a.inode = st.inode;
}

NodeRef make_load(LoadAttrs a) {
  stamp(a);
  a.origin.assign(a.file_shape.size(), 0);
  const Shape shape = a.file_shape;
  const DType dtype = a.dtype;
  return make_node(Op::Load, {}, a.encode(), shape, dtype);
}

void read_format_box(const LoadAttrs& a, const poly::Box& box, const View& out);

// A read's error names the slice it read, after the file (and dataset) it names first:
// "'u.h5', dataset 'u', slice [1..10]x[1..4]: ...".
std::string with_slice(const std::string& msg, const std::string& path, const poly::Box& box) {
  const std::string slice = box.rank() == 0 ? "" : cat_str(", slice ", poly::to_string(box));
  const std::string quoted = "'" + path + "'";
  if (slice.empty() || msg.rfind(quoted, 0) != 0)
    return slice.empty() ? msg : cat_str(quoted, slice, ": ", msg);
  const size_t colon = msg.find(": ", quoted.size());
  if (colon == std::string::npos) return msg + slice;
  return msg.substr(0, colon) + slice + msg.substr(colon);
}

void read_box(const LoadAttrs& a, const std::vector<int64_t>& lo, const View& out) {
  LoadAttrs now = a;
  stamp(now);
  user_check(now.mtime_ns == a.mtime_ns && now.file_bytes == a.file_bytes && now.inode == a.inode, "'",
             identity_file(a), "' changed since it was loaded (modified or rewritten); load it again");
  poly::Coords first(lo.size()), last(lo.size());
  for (size_t d = 0; d < lo.size(); ++d) {
    first[d] = a.origin[d] + lo[d];
    last[d] = first[d] + out.shape[d] - 1;
  }
  const poly::Box box(first, last);
  try {
    read_format_box(a, box, out);
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    throw Error(with_slice(e.what(), a.path, box));
  }
}

void read_format_box(const LoadAttrs& a, const poly::Box& box, const View& out) {
  switch (a.format) {
    case LoadAttrs::Raw: {
      NpyHeader h;
      h.dtype = a.dtype;
      h.shape = a.file_shape;
      h.fortran_order = a.fortran_order;
      h.data_offset = a.data_offset;
      return read_npy_box(a.path, h, box, out);
    }
    case LoadAttrs::Hdf5: return read_hdf5_box(a.path, a.dataset, box, out);
    case LoadAttrs::Zarr: return read_zarr_box(a.path, read_zarr_meta(a.path), box, out);
    case LoadAttrs::Csv: {
      // The node's columns are the kept ones, in the file's rows: a box of them as it is.
      return read_csv_box(a.path, CsvIndex::decode(a.extra), box, out);
    }
  }
  internal_fail(__FILE__, __LINE__, "unknown load format");
}

// Installed when this file is linked (every binary that can make a load node links it).
const bool g_installed = (install_load_reader(&read_box), true);

}  // namespace

int64_t load_bytes(const std::vector<NodeRef>& roots, int mpi_ranks) {
  int64_t total = 0;
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> todo;
  for (const NodeRef& r : roots) todo.push_back(r.get());
  while (!todo.empty()) {
    const Node* n = todo.back();
    todo.pop_back();
    if (n->value || n->stored || !seen.insert(n).second) continue;
    if (n->op == Op::Load) total += numel(n->shape) * dtype_size(n->dtype);
    for (const NodeRef& in : n->inputs) todo.push_back(in.get());
  }
  return mpi_ranks > 1 ? total / mpi_ranks : total;
}

NodeRef lazy_raw(const std::string& path, const NpyHeader& h) {
  LoadAttrs a;
  a.format = LoadAttrs::Raw;
  a.path = path;
  a.data_offset = h.data_offset;
  a.fortran_order = h.fortran_order;
  a.dtype = h.dtype;
  a.file_shape = h.shape;
  return make_load(std::move(a));
}

NodeRef lazy_hdf5(const std::string& path, const std::string& dataset, const Hdf5Info& info) {
  if (info.raw_offset >= 0) {  // contiguous and uncompressed: plain reads at its offset
    NpyHeader h;
    h.dtype = info.dtype;
    h.shape = info.shape;
    h.data_offset = info.raw_offset;
    return lazy_raw(path, h);
  }
  LoadAttrs a;
  a.format = LoadAttrs::Hdf5;
  a.path = path;
  a.dataset = dataset;
  a.dtype = info.dtype;
  a.file_shape = info.shape;
  return make_load(std::move(a));
}

NodeRef lazy_csv(const std::string& path, const CsvIndex& ix) {
  LoadAttrs a;
  a.format = LoadAttrs::Csv;
  a.path = path;
  a.dtype = ix.dtype;
  a.file_shape = {ix.rows, static_cast<int64_t>(ix.keep.size())};
  a.extra = ix.encode();
  return make_load(std::move(a));
}

NodeRef lazy_zarr(const std::string& dir, const ZarrMeta& m) {
  LoadAttrs a;
  a.format = LoadAttrs::Zarr;
  a.path = dir;
  a.dtype = m.dtype;
  a.file_shape = m.shape;
  return make_load(std::move(a));
}

}  // namespace tapestry::io
