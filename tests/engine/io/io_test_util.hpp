// Helpers shared by the engine/io tests: scratch directories, raw files, filled values.
//   TempDir d;  std::string p = d.path("x.npy");   // removed with everything in it
//   write_file(p, raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8));
//   auto v = iota(DType::I32, {3, 4});             // 0, 1, 2, ... in the dtype
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"

namespace tapestry::io_test {

class TempDir {
 public:
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "tapestry-io-XXXXXX").string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& dir() const { return dir_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

// The message of the tapestry::Error fn throws, or "" when it throws none.
template <class F> std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A .npy file with the given dict text (no alignment) and `data_bytes` zero bytes of data.
inline std::string raw_npy(const std::string& dict, size_t data_bytes, int version = 1) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(version);
  out += '\0';
  const std::string h = dict + "\n";
  const uint32_t n = static_cast<uint32_t>(h.size());
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (version >= 2) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + h + std::string(data_bytes, '\0');
}

// Element i (row-major) of an iota value, as a double; bools alternate from false.
inline double iota_at(DType t, int64_t i) {
  switch (t) {
    case DType::Bool: return i % 3 == 1;
    case DType::I32: return static_cast<double>(i * 7 - 20);
    case DType::I64: return static_cast<double>(i * 1000003 - 5);
    case DType::F32: return static_cast<double>(static_cast<float>(i * 0.25 - 1.5));
    default: break;  // f64 and the other dtypes: the float formula
  }
  return i / 3.0 - 2;
}

inline std::shared_ptr<Value> iota(DType t, const Shape& s) {
  auto v = Value::alloc(t, s);
  const int64_t n = numel(s);
  dispatch_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < n; ++i) v->data<T>()[i] = static_cast<T>(iota_at(t, i));
  });
  return v;
}

// Element at a row-major index of a view with any strides, as a double.
inline double at(const View& v, int64_t flat) {
  int64_t off = 0;
  for (int d = v.rank() - 1; d >= 0; --d) {
    off += (flat % v.shape[d]) * v.strides[d];
    flat /= v.shape[d];
  }
  return dispatch_dtype(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(v.ptr<T>()[off]);
  });
}

inline bool has_numpy() {
  static const bool ok = std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return ok;
}

}  // namespace tapestry::io_test
