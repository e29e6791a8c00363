// HDF5 datasets by boxes (hdf5.hpp).
#include "engine/io/hdf5.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "engine/io/atomic_file.hpp"
#include "engine/io/byte_source.hpp"
#include "engine/io/npy.hpp"
#include "engine/io/write_file.hpp"
#include "engine/ir/error.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry::io {

namespace {

// An HDF5 identifier, closed by its own close function.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

constexpr int64_t kSlab = int64_t(16) << 20;  // bytes per library read of a large box

// The library prints its error stack to stderr by default; our errors say what failed instead.
void quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

template <class... Args>
[[noreturn]] void fail(const std::string& path, const std::string& ds, const Args&... args) {
  throw Error(cat_str("'", path, "'", ds.empty() ? "" : cat_str(", dataset '", ds, "'"), ": ", args...));
}

// The bool type h5py writes and reads: an enum of int8.
Handle bool_type() {
  Handle t(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
  int8_t v = 0;
  H5Tenum_insert(t.get(), "FALSE", &v);
  v = 1;
  H5Tenum_insert(t.get(), "TRUE", &v);
  return t;
}

// The memory (and stored) type of a dtype: native little-endian numbers, h5py's bool enum.
Handle mem_type(DType t) {
  switch (t) {
    case DType::F32: return Handle(H5Tcopy(H5T_NATIVE_FLOAT), H5Tclose);
    case DType::F64: return Handle(H5Tcopy(H5T_NATIVE_DOUBLE), H5Tclose);
    case DType::I32: return Handle(H5Tcopy(H5T_NATIVE_INT32), H5Tclose);
    case DType::I64: return Handle(H5Tcopy(H5T_NATIVE_INT64), H5Tclose);
    case DType::Bool: return bool_type();
    case DType::I8: return Handle(H5Tcopy(H5T_NATIVE_INT8), H5Tclose);
    case DType::U8: return Handle(H5Tcopy(H5T_NATIVE_UINT8), H5Tclose);
    default: break;  // f16 (HDF5 1.10 has no native half), bf16, complex (h5py's compound)
  }
  throw Error(cat_str("HDF5 files here hold bool, i8, u8, i32, i64, f32 and f64, not ", dtype_name(t),
                      " (cast it first)"));
}

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_OPAQUE: return "opaque";
    case H5T_BITFIELD: return "bitfield";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum";
    case H5T_VLEN: return "variable-length";
    case H5T_ARRAY: return "array";
    case H5T_TIME: return "time";
    default: return "unknown";
  }
}

// The dtype a stored type loads as (HDF5 converts the narrower integers and floats).
DType dtype_of(const std::string& path, const std::string& ds, hid_t ft) {
  const H5T_class_t c = H5Tget_class(ft);
  const size_t size = H5Tget_size(ft);
  if (c == H5T_FLOAT) return size <= 4 ? DType::F32 : DType::F64;
  if (c == H5T_INTEGER) {
    const bool sign = H5Tget_sign(ft) == H5T_SGN_2;
    if (size == 1) return sign ? DType::I8 : DType::U8;
    if (size < 4 || (size == 4 && sign)) return DType::I32;
    if (size <= 4 || (size == 8 && sign)) return DType::I64;
    fail(path, ds, "an unsigned 64-bit integer dataset, which Tapestry has no dtype for");
  }
  if (c == H5T_ENUM && size == 1) return DType::Bool;  // h5py's bool
  fail(path, ds, "a dataset of HDF5 ", class_name(c),
       " type, which Tapestry cannot load (integers, floats and h5py bools only)");
}

herr_t first_error(unsigned, const H5E_error2_t* e, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (s->empty() && e->desc) *s = e->desc;
  return 0;
}

// The library's own words for the error it just had (the innermost of its stack).
std::string library_error() {
  std::string why;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first_error, &why);
  return why;
}

Handle open_file(const std::string& path, unsigned mode) {
  quiet();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, "", "cannot open for reading: ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "", "not a regular file");
  Handle f(H5Fopen(path.c_str(), mode, H5P_DEFAULT), H5Fclose);
  if (!f.ok()) {
    const std::string why = library_error();
    if (H5Fis_hdf5(path.c_str()) == 0) fail(path, "", "not an HDF5 file");
    fail(path, "", "cannot open the HDF5 file", mode == H5F_ACC_RDONLY ? " for reading" : " for writing",
         why.empty() ? "" : " (" + why + ")");
  }
  return f;
}

herr_t add_name(hid_t, const char* name, const H5L_info_t*, void* names) {
  auto* s = static_cast<std::string*>(names);
  if (s->size() < 400) *s += (s->empty() ? "" : ", ") + std::string(name);
  return 0;
}

Handle open_dataset(const std::string& path, hid_t file, const std::string& ds) {
  Handle d(H5Dopen2(file, ds.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) {
    std::string names;
    H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, add_name, &names);
    fail(path, ds, "no such dataset (the file holds: ", names.empty() ? "nothing" : names, ")");
  }
  return d;
}

herr_t read_attr(hid_t obj, const char* name, const H5A_info_t*, void* out) {
  auto& attrs = *static_cast<std::map<std::string, Hdf5Attr>*>(out);
  Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  Handle t(H5Aget_type(a.get()), H5Tclose);
  Handle s(H5Aget_space(a.get()), H5Sclose);
  const H5T_class_t c = H5Tget_class(t.get());
  const hssize_t n = H5Sget_simple_extent_npoints(s.get());
  if (c == H5T_STRING && n == 1) {
    if (H5Tis_variable_str(t.get()) > 0) {
      Handle m(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(m.get(), H5T_VARIABLE);
      H5Tset_cset(m.get(), H5Tget_cset(t.get()));  // HDF5 converts no string between ASCII and UTF-8
      char* p = nullptr;
      if (H5Aread(a.get(), m.get(), &p) >= 0 && p) {
        attrs[name] = std::string(p);
        H5free_memory(p);
      }
    } else {
      std::string v(H5Tget_size(t.get()), '\0');
      Handle m(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(m.get(), v.size() + 1);
      H5Tset_cset(m.get(), H5Tget_cset(t.get()));
      std::vector<char> buf(v.size() + 1, '\0');
      if (H5Aread(a.get(), m.get(), buf.data()) >= 0) attrs[name] = std::string(buf.data());
    }
  } else if ((c == H5T_INTEGER || c == H5T_FLOAT || c == H5T_ENUM) && n >= 1 && n <= (1 << 20)) {
    std::vector<double> v(static_cast<size_t>(n));
    Handle m(H5Tcopy(H5T_NATIVE_DOUBLE), H5Tclose);
    if (c == H5T_ENUM) {  // h5py bools: read the int8 values
      std::vector<int8_t> b(static_cast<size_t>(n));
      if (H5Aread(a.get(), t.get(), b.data()) >= 0) std::copy(b.begin(), b.end(), v.begin());
    } else if (H5Aread(a.get(), m.get(), v.data()) < 0) {
      return 0;
    }
    attrs[name] = std::move(v);
  }
  return 0;  // other kinds (compound, references, ...) are left out
}

// The file-space selection of `box` on a dataset of `shape`.
Handle select(const std::string& path, const std::string& ds, hid_t d, const poly::Box& box) {
  Handle space(H5Dget_space(d), H5Sclose);
  if (box.rank() == 0) return space;
  std::vector<hsize_t> start, count;
  for (int i = 0; i < box.rank(); ++i) {
    start.push_back(static_cast<hsize_t>(box.lo[i]));
    count.push_back(static_cast<hsize_t>(box.hi[i] - box.lo[i] + 1));
  }
  if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0)
    fail(path, ds, "cannot select the slice ", poly::to_string(box));
  return space;
}

Handle mem_space(const Shape& extents) {
  if (extents.empty()) return Handle(H5Screate(H5S_SCALAR), H5Sclose);
  std::vector<hsize_t> dims(extents.begin(), extents.end());
  return Handle(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
}

void write_attr(const std::string& path, const std::string& ds, hid_t d, const std::string& name,
                const Hdf5Attr& v) {
  if (const std::string* s = std::get_if<std::string>(&v)) {
    Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(t.get(), H5T_VARIABLE);
    H5Tset_cset(t.get(), H5T_CSET_UTF8);
    Handle sp(H5Screate(H5S_SCALAR), H5Sclose);
    Handle a(H5Acreate2(d, name.c_str(), t.get(), sp.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    const char* p = s->c_str();
    if (!a.ok() || H5Awrite(a.get(), t.get(), &p) < 0) fail(path, ds, "cannot write attribute '", name, "'");
    return;
  }
  const std::vector<double>& n = std::get<std::vector<double>>(v);
  const hsize_t len = n.size();
  Handle sp(n.size() == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &len, nullptr), H5Sclose);
  Handle a(H5Acreate2(d, name.c_str(), H5T_IEEE_F64LE, sp.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.ok() || H5Awrite(a.get(), H5T_NATIVE_DOUBLE, n.data()) < 0)
    fail(path, ds, "cannot write attribute '", name, "'");
}

}  // namespace

Hdf5Info read_hdf5_info(const std::string& path, const std::string& ds) {
  const Handle f = open_file(path, H5F_ACC_RDONLY);
  const Handle d = open_dataset(path, f.get(), ds);
  const Handle ft(H5Dget_type(d.get()), H5Tclose);
  const Handle space(H5Dget_space(d.get()), H5Sclose);
  Hdf5Info info;
  info.dtype = dtype_of(path, ds, ft.get());
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > kMaxDims) fail(path, ds, "a dataspace Tapestry cannot load");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  for (hsize_t n : dims) {
    if (n == 0) fail(path, ds, "an empty dataset (Tapestry shapes are positive)");
    info.shape.push_back(static_cast<int64_t>(n));
  }
  const Handle plist(H5Dget_create_plist(d.get()), H5Pclose);
  if (H5Pget_layout(plist.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> c(static_cast<size_t>(rank));
    H5Pget_chunk(plist.get(), rank, c.data());
    info.chunks.assign(c.begin(), c.end());
  } else if (H5Pget_layout(plist.get()) == H5D_CONTIGUOUS && H5Pget_nfilters(plist.get()) == 0) {
    const Handle native = mem_type(info.dtype);
    const haddr_t at = H5Dget_offset(d.get());
    if (at != HADDR_UNDEF && H5Tequal(ft.get(), native.get()) > 0) info.raw_offset = static_cast<int64_t>(at);
  }
  H5Aiterate2(d.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, read_attr, &info.attrs);
  return info;
}

namespace {

void read_slab(const std::string& path, const std::string& ds, hid_t d, const poly::Box& box,
               const View& out) {
  const Handle fs = select(path, ds, d, box);
  std::shared_ptr<Value> stage;
  View dst = out;
  if (!out.is_contiguous()) {
    stage = Value::alloc(out.dtype, out.shape);
    dst = stage->view();
  }
  const Handle ms = mem_space(out.shape);
  const Handle mt = mem_type(out.dtype);
  if (H5Dread(d, mt.get(), ms.get(), fs.get(), H5P_DEFAULT, dst.byte_ptr()) < 0)
    fail(path, ds, "the library cannot read it (", library_error(), ")");
  stats().bytes_read += static_cast<uint64_t>(dst.numel() * dtype_size(out.dtype));
  note_io_progress(dst.numel() * dtype_size(out.dtype));
  if (stage) {
    // Element by element into the strided view (rare: loads read into fresh dense values).
    const int esz = dtype_size(out.dtype);
    std::vector<int64_t> idx(static_cast<size_t>(out.rank()), 0);
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t off = out.offset;
      for (int k = 0; k < out.rank(); ++k) off += idx[k] * out.strides[k];
      std::memcpy(static_cast<char*>(out.buf->data()) + off * esz, dst.byte_ptr() + i * esz, esz);
      for (int k = out.rank() - 1; k >= 0 && ++idx[k] == out.shape[k]; --k) idx[k] = 0;
    }
  }
}

}  // namespace

namespace {

// Where each chunk that `box` touches lies (HADDR_UNDEF: never written), with the part of the
// box in it; `chunks` gets the chunk shape.
std::vector<std::pair<poly::Box, haddr_t>> chunk_parts(const std::string& path, const std::string& ds,
                                                       hid_t d, hid_t plist, const poly::Box& box,
                                                       std::vector<int64_t>& chunks) {
  const int r = box.rank();
  std::vector<hsize_t> c(static_cast<size_t>(r));
  H5Pget_chunk(plist, r, c.data());
  chunks.assign(c.begin(), c.end());
  std::vector<std::pair<poly::Box, haddr_t>> out;
  std::vector<int64_t> first(r), last(r), idx(r);
  for (int k = 0; k < r; ++k) {
    first[k] = idx[k] = box.lo[k] / chunks[k];
    last[k] = box.hi[k] / chunks[k];
  }
  while (true) {
    std::vector<hsize_t> origin(static_cast<size_t>(r));
    poly::Coords lo(r), hi(r);
    for (int k = 0; k < r; ++k) {
      origin[k] = static_cast<hsize_t>(idx[k] * chunks[k]);
      lo[k] = std::max(box.lo[k], idx[k] * chunks[k]);
      hi[k] = std::min(box.hi[k], (idx[k] + 1) * chunks[k] - 1);
    }
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(d, origin.data(), &mask, &addr, &size) < 0)
      fail(path, ds, "cannot find the chunk at ", poly::to_string(poly::Box(lo, hi)), " (", library_error(),
           ")");
    out.emplace_back(poly::Box(lo, hi), addr);
    int k = r - 1;
    for (; k >= 0 && ++idx[k] > last[k]; --k) idx[k] = first[k];
    if (k < 0) break;
  }
  return out;
}

// An unfiltered chunked dataset of the native type read raw: each chunk's part of the box with
// pread, so a slice reads its own bytes rather than whole chunks (and ranks sharing a chunk
// read only their parts); a chunk never written holds the fill value. False when the dataset
// is not such a one (the library then reads it).
bool read_chunks_raw(const std::string& path, const std::string& ds, hid_t d, const poly::Box& box,
                     const View& out) {
  const Handle plist(H5Dget_create_plist(d), H5Pclose);
  if (box.rank() == 0 || !out.is_contiguous() || H5Pget_layout(plist.get()) != H5D_CHUNKED ||
      H5Pget_nfilters(plist.get()) != 0)
    return false;
  const Handle ft(H5Dget_type(d), H5Tclose);
  const Handle mt = mem_type(out.dtype);
  if (H5Tequal(ft.get(), mt.get()) <= 0) return false;
  const int r = box.rank();
  const int esz = dtype_size(out.dtype);
  std::string fill(static_cast<size_t>(esz), '\0');
  H5D_fill_value_t defined = H5D_FILL_VALUE_UNDEFINED;
  if (H5Pfill_value_defined(plist.get(), &defined) >= 0 && defined != H5D_FILL_VALUE_UNDEFINED)
    H5Pget_fill_value(plist.get(), mt.get(), fill.data());
  std::vector<int64_t> chunks;
  const auto parts = chunk_parts(path, ds, d, plist.get(), box, chunks);
  char* base = out.byte_ptr();
  std::vector<ByteRun> runs;
  for (const auto& [part, addr] : parts) {
    const int64_t run = part.extent(r - 1);
    std::vector<int64_t> e(static_cast<size_t>(r), 0);
    while (true) {
      int64_t co = 0, oo = 0;
      for (int k = 0; k < r; ++k) {
        const int64_t g = part.lo[k] + e[k];
        co = co * chunks[k] + g % chunks[k];
        oo = oo * box.extent(k) + (g - box.lo[k]);
      }
      char* dst = base + oo * esz;
      if (addr == HADDR_UNDEF) {
        for (int64_t k = 0; k < run; ++k) std::memcpy(dst + k * esz, fill.data(), static_cast<size_t>(esz));
      } else {
        const int64_t at = static_cast<int64_t>(addr) + co * esz;
        if (!runs.empty() && runs.back().offset + runs.back().bytes == at &&
            runs.back().dst + runs.back().bytes == dst)
          runs.back().bytes += run * esz;
        else runs.push_back({at, run * esz, dst});
      }
      int k = r - 2;
      for (; k >= 0 && ++e[k] == part.extent(k); --k) e[k] = 0;
      if (k < 0) break;
    }
  }
  open_bytes(path)->read_runs(std::move(runs));
  stats().bytes_read += static_cast<uint64_t>(box.volume() * esz);
  if (out.dtype == DType::Bool)
    for (int64_t i = 0; i < box.volume(); ++i) base[i] = base[i] != 0;
  return true;
}

}  // namespace

void read_hdf5_box(const std::string& path, const std::string& ds, const poly::Box& box, const View& out) {
  if (box.rank() > 0 && box.empty()) return;
  const Handle f = open_file(path, H5F_ACC_RDONLY);
  const Handle d = open_dataset(path, f.get(), ds);
  if (read_chunks_raw(path, ds, d.get(), box, out)) return;
  // Slabs of rows of at most kSlab bytes, so the progress bar moves during one large box.
  const int64_t row = box.rank() == 0 ? 0 : box.volume() / box.extent(0) * dtype_size(out.dtype);
  const int64_t rows = box.rank() == 0 ? 1 : std::max<int64_t>(1, kSlab / std::max<int64_t>(row, 1));
  for (int64_t at = 0; at < (box.rank() == 0 ? 1 : box.extent(0)); at += rows) {
    if (box.rank() == 0) return read_slab(path, ds, d.get(), box, out);
    poly::Box b = box;
    b.lo[0] = box.lo[0] + at;
    b.hi[0] = std::min(box.hi[0], b.lo[0] + rows - 1);
    View o = out;
    o.offset += at * out.strides[0];
    o.shape[0] = b.extent(0);
    read_slab(path, ds, d.get(), b, o);
  }
}

int64_t create_hdf5(const std::string& path, const std::string& ds, DType dtype, const Shape& shape,
                    const std::map<std::string, Hdf5Attr>& attrs, const std::vector<int64_t>& chunks) {
  quiet();
  const Handle f(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!f.ok()) fail(path, "", "cannot create the HDF5 file");
  const Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  const Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (chunks.empty()) {
    H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS);
    H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY);  // the bytes exist, at a known offset
    H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);    // every rank writes its own
  } else {
    std::vector<hsize_t> c(chunks.begin(), chunks.end());
    H5Pset_chunk(dcpl.get(), static_cast<int>(c.size()), c.data());
    // Every chunk allocated now and never filled: unfiltered chunks are plain bytes at offsets
    // the library tells, which every rank then writes itself (write_hdf5_chunks_raw).
    H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY);
    H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);
  }
  const Handle space = mem_space(shape);
  const Handle ft = mem_type(dtype);
  const Handle d(H5Dcreate2(f.get(), ds.c_str(), ft.get(), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
                 H5Dclose);
  if (!d.ok()) fail(path, ds, "cannot create the dataset");
  for (const auto& [name, v] : attrs) write_attr(path, ds, d.get(), name, v);
  if (!chunks.empty()) return -1;
  const haddr_t at = H5Dget_offset(d.get());
  if (at == HADDR_UNDEF) fail(path, ds, "the dataset's data has no offset");
  return static_cast<int64_t>(at);
}

void write_hdf5_chunked_box(const std::string& path, const std::string& ds, const poly::Box& box,
                            const View& in) {
  if (box.rank() > 0 && box.empty()) return;
  const int r = box.rank();
  const int esz = dtype_size(in.dtype);
  // Where each chunk the box touches lies, from the library; then the file is closed and the
  // bytes are written raw (the library's own writes would need one writer for the file).
  std::vector<int64_t> chunks;
  std::vector<std::pair<poly::Box, haddr_t>> where;  // the part of box in a chunk, the chunk's offset
  {
    const Handle f = open_file(path, H5F_ACC_RDONLY);
    const Handle d = open_dataset(path, f.get(), ds);
    const Handle plist(H5Dget_create_plist(d.get()), H5Pclose);
    if (H5Pget_layout(plist.get()) != H5D_CHUNKED || H5Pget_nfilters(plist.get()) != 0)
      fail(path, ds, "not a chunked, unfiltered dataset");
    where = chunk_parts(path, ds, d.get(), plist.get(), box, chunks);
    for (const auto& [part, addr] : where)
      if (addr == HADDR_UNDEF) fail(path, ds, "the chunk at ", poly::to_string(part), " is not allocated");
  }
  const WriteFile f(path, O_WRONLY, "for writing");
  const char* src = static_cast<const char*>(in.buf->data());
  std::string buf;  // a run of bytes contiguous in the file
  int64_t buf_at = -1;
  auto flush = [&] {
    if (!buf.empty()) f.write_at(buf.data(), buf.size(), buf_at);
    buf.clear();
  };
  for (const auto& [part, addr] : where) {
    // Row by row of the part (the last dimension is contiguous in the chunk).
    const int64_t run = part.extent(r - 1);
    std::vector<int64_t> e(static_cast<size_t>(r), 0);
    while (true) {
      int64_t co = 0, vo = in.offset;
      for (int k = 0; k < r; ++k) {
        const int64_t g = part.lo[k] + e[k];
        co = co * chunks[k] + g % chunks[k];
        vo += (g - box.lo[k]) * in.strides[k];
      }
      const int64_t at = static_cast<int64_t>(addr) + co * esz;
      if (at != buf_at + static_cast<int64_t>(buf.size()) || buf.size() >= (size_t(16) << 20)) {
        flush();
        buf_at = at;
      }
      if (in.strides[r - 1] == 1) {
        buf.append(src + vo * esz, static_cast<size_t>(run * esz));
      } else {
        for (int64_t k = 0; k < run; ++k) buf.append(src + (vo + k * in.strides[r - 1]) * esz, esz);
      }
      int k = r - 2;
      for (; k >= 0 && ++e[k] == part.extent(k); --k) e[k] = 0;
      if (k < 0) break;
    }
  }
  flush();
  stats().bytes_written += static_cast<uint64_t>(in.numel() * esz);
}

void save_hdf5(const std::string& path, const std::string& ds, const View& v,
               const std::map<std::string, Hdf5Attr>& attrs, const std::vector<int64_t>& chunks) {
  write_atomically(path, [&](const std::string& tmp) {
    const int64_t at = create_hdf5(tmp, ds, v.dtype, v.shape, attrs, chunks);
    const poly::Box all = poly::Box::of_shape(v.shape);
    if (at >= 0) {
      NpyHeader h;
      h.dtype = v.dtype;
      h.shape = v.shape;
      h.data_offset = at;
      write_npy_box(tmp, h, all, v);
    } else {
      write_hdf5_chunked_box(tmp, ds, all, v);
    }
  });
}

}  // namespace tapestry::io
