// HDF5 datasets by boxes (hdf5.hpp).
#include "engine/io/hdf5.hpp"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "engine/io/atomic_file.hpp"
#include "engine/io/npy.hpp"
#include "engine/ir/error.hpp"
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
  fail(path, ds, "a dataset of HDF5 type class ", static_cast<int>(c),
       ", which Tapestry cannot load (integers, floats and h5py bools only)");
}

Handle open_file(const std::string& path, unsigned mode) {
  quiet();
  Handle f(H5Fopen(path.c_str(), mode, H5P_DEFAULT), H5Fclose);
  if (!f.ok()) {
    if (H5Fis_hdf5(path.c_str()) == 0) fail(path, "", "not an HDF5 file");
    fail(path, "", "cannot open the HDF5 file", mode == H5F_ACC_RDONLY ? " for reading" : " for writing");
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

void read_hdf5_box(const std::string& path, const std::string& ds, const poly::Box& box, const View& out) {
  if (box.rank() > 0 && box.empty()) return;
  const Handle f = open_file(path, H5F_ACC_RDONLY);
  const Handle d = open_dataset(path, f.get(), ds);
  const Handle fs = select(path, ds, d.get(), box);
  std::shared_ptr<Value> stage;
  View dst = out;
  if (!out.is_contiguous()) {
    stage = Value::alloc(out.dtype, out.shape);
    dst = stage->view();
  }
  const Handle ms = mem_space(out.shape);
  const Handle mt = mem_type(out.dtype);
  if (H5Dread(d.get(), mt.get(), ms.get(), fs.get(), H5P_DEFAULT, dst.byte_ptr()) < 0)
    fail(path, ds, "cannot read the slice ", poly::to_string(box));
  stats().bytes_read += static_cast<uint64_t>(dst.numel() * dtype_size(out.dtype));
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

void write_hdf5_box(const std::string& path, const std::string& ds, const poly::Box& box, const View& in) {
  if (box.rank() > 0 && box.empty()) return;
  const Handle f = open_file(path, H5F_ACC_RDWR);
  const Handle d = open_dataset(path, f.get(), ds);
  const Handle fs = select(path, ds, d.get(), box);
  std::shared_ptr<Value> stage;
  View src = in;
  if (!in.is_contiguous()) {  // write_hdf5_box gets whole observed values; copy the rare strided one
    stage = Value::alloc(in.dtype, in.shape);
    const int esz = dtype_size(in.dtype);
    std::vector<int64_t> idx(static_cast<size_t>(in.rank()), 0);
    for (int64_t i = 0; i < in.numel(); ++i) {
      int64_t off = in.offset;
      for (int k = 0; k < in.rank(); ++k) off += idx[k] * in.strides[k];
      std::memcpy(stage->view().byte_ptr() + i * esz, static_cast<const char*>(in.buf->data()) + off * esz,
                  esz);
      for (int k = in.rank() - 1; k >= 0 && ++idx[k] == in.shape[k]; --k) idx[k] = 0;
    }
    src = stage->view();
  }
  const Handle ms = mem_space(in.shape);
  const Handle mt = mem_type(in.dtype);
  if (H5Dwrite(d.get(), mt.get(), ms.get(), fs.get(), H5P_DEFAULT, src.byte_ptr()) < 0)
    fail(path, ds, "cannot write the slice ", poly::to_string(box));
  stats().bytes_written += static_cast<uint64_t>(src.numel() * dtype_size(in.dtype));
}

void save_hdf5(const std::string& path, const std::string& ds, const View& v,
               const std::map<std::string, Hdf5Attr>& attrs, const std::vector<int64_t>& chunks) {
  write_atomically(path, [&](const std::string& tmp) {
    create_hdf5(tmp, ds, v.dtype, v.shape, attrs, chunks);
    write_hdf5_box(tmp, ds, poly::Box::of_shape(v.shape), v);
  });
}

}  // namespace tapestry::io
