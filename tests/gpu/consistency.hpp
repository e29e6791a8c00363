// The helpers of gpu.consistency's families (consistency.cpp, consistency_*.cpp): device
// copies of host values, sample inputs, and comparisons that count checks and failures.
//   Dev dx = upload(x->view());  cuda::run_...(dx.v, out.v);  compare("what", *want, *download(out.v), 1e-6);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "engine/ir/value.hpp"
#include "kernels/cuda/cuda_backend.hpp"

namespace tapestry::gpucheck {

inline int checks = 0, failures = 0;

struct Dev {  // a device copy of a host value
  cuda::DeviceBuffer buf;
  cuda::DView v;
};
inline Dev upload(const View& h) {
  Dev d{cuda::DeviceBuffer(std::max<int64_t>(1, h.numel()) * dtype_size(h.dtype)), {}};
  d.v = cuda::dview(d.buf.get(), h.dtype, h.shape);
  cuda::to_device(h, d.v);
  return d;
}
inline std::shared_ptr<Value> download(const cuda::DView& v) {
  auto h = Value::alloc(v.dtype, v.shape);
  cuda::to_host(v, h->view());
  return h;
}
inline cuda::DView like(const cuda::DView& base, const View& h) {  // the same strides on the device copy
  cuda::DView v = base;
  v.shape = h.shape;
  v.strides = h.strides;
  return v;
}

inline std::shared_ptr<Value> sample(DType t, const Shape& s, int seed) {
  auto v = Value::alloc(t, s);
  dispatch_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = v->template data<T>();
    for (int64_t i = 0; i < v->view().numel(); ++i) {
      const int64_t k = (i * 7919 + seed * 104729) % 41 - 20;
      if constexpr (std::is_same_v<T, bool>) p[i] = k % 3 == 0;
      else if constexpr (std::is_floating_point_v<T>) p[i] = T(k) / T(8) + T(seed) / T(16);
      else p[i] = T(k);
    }
  });
  return v;
}

// int_slack: how far integers may differ. An integer result of a float function (tanh of an
// i32) truncates a double, and the CPU's vector libm (libmvec, up to 4 ulp) and CUDA's round a
// few ulp apart: tanh(19) is 1 - 1 ulp in glibc's scalar tanh and CUDA's (truncated to 0), 1.0
// in libmvec's (seen on an H200).
inline void compare(const std::string& what, const Value& cpu, const Value& gpu, double rtol,
                    int64_t int_slack = 0) {
  ++checks;
  int bad = 0;
  dispatch_dtype(cpu.view().dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = cpu.template data<T>();
    const T* b = gpu.template data<T>();
    for (int64_t i = 0; i < cpu.view().numel(); ++i) {
      bool ok;
      if constexpr (std::is_floating_point_v<T>)
        ok = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i] ||
             std::fabs(double(a[i]) - double(b[i])) <= rtol * std::max(1.0, std::fabs(double(a[i])));
      else if constexpr (std::is_same_v<T, bool>) ok = a[i] == b[i];
      else
        ok = a[i] == b[i] || (int_slack > 0 && std::llabs(static_cast<long long>(a[i]) -
                                                          static_cast<long long>(b[i])) <= int_slack);
      if (!ok && bad++ < 3)
        std::fprintf(stderr, "MISMATCH %s [%lld]: cpu %.17g gpu %.17g\n", what.c_str(), (long long)i,
                     double(a[i]), double(b[i]));
    }
  });
  if (bad) ++failures;
}

// Floating values (real or complex, f32 or f64) compared as their real components.
inline void compare_floats(const std::string& what, const Value& cpu, const Value& gpu, double rtol) {
  ++checks;
  const View a = cpu.view(), b = gpu.view();
  const bool single = a.dtype == DType::F32 || a.dtype == DType::C64;
  const int64_t m = a.numel() * (is_complex(a.dtype) ? 2 : 1);
  double scale = 1;
  for (int64_t i = 0; i < m; ++i)
    scale = std::max(scale, std::fabs(single ? double(reinterpret_cast<const float*>(a.byte_ptr())[i])
                                             : reinterpret_cast<const double*>(a.byte_ptr())[i]));
  int bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    const double x = single ? reinterpret_cast<const float*>(a.byte_ptr())[i]
                            : reinterpret_cast<const double*>(a.byte_ptr())[i];
    const double y = single ? reinterpret_cast<const float*>(b.byte_ptr())[i]
                            : reinterpret_cast<const double*>(b.byte_ptr())[i];
    if (!(std::fabs(x - y) <= rtol * scale) && bad++ < 3)
      std::fprintf(stderr, "MISMATCH %s [%lld]: cpu %.17g gpu %.17g\n", what.c_str(), (long long)i, x, y);
  }
  if (bad) ++failures;
}

// The families outside consistency.cpp.
void check_line();     // consistency_line.cpp
void check_complex();  // consistency_complex.cpp

}  // namespace tapestry::gpucheck
