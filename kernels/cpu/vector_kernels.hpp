// The CPU's hot loops, built once per instruction set (vector_kernels.cpp is compiled for AVX2
// and again for AVX-512, cmake/native_flags.cmake) and reached through the table of the set
// in use (cpu::isa(), kernels.hpp):
//   const vec::Table& t = vec::table();
//   vec::MapKernel k = t.map_kernel(instr).fn;   // run_map's loop for one instruction
// Every variant computes the same values bit for bit (kernels.cpu.isa tests run both).
#pragma once

#include <cstdint>

#include "engine/ir/fused.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry::cpu::vec {

// o[i] = op(a[i], b[i], c[i]) for i < n (n a multiple of 64; unused operands are null).
using MapKernel = void (*)(void* o, const void* a, const void* b, const void* c, int64_t n);
struct MapResolved {
  MapKernel fn = nullptr;
  DType out = DType::F32;
};

// Rows [lo, hi) of a 2-D f32 correlation with a small kernel (window.cpp prepares it): each
// output sums its nonzero taps in row-major order in f32, by fused multiply-adds, skipping the
// taps outside x. With `axpy`, out = u + c * sum, the product rounded on its own, as the map
// program Add(u, Mul(c, s)) computes it.
struct Stencil2d {
  const float* x;            // x's element [0, 0]
  int64_t xh, xw, sx;        // x's rows, columns and row stride (columns contiguous)
  int64_t o0, o1;            // the origin: output (y, col) with tap (i, j) reads x[y+i+o0, col+j+o1]
  int64_t kh;                // kernel rows
  const float* kw;           // nonzero weights, row-major
  const int64_t* kcol;       // their columns
  const int64_t* kstart;     // kernel row i's taps: [kstart[i], kstart[i+1])
  float* out;                // out's element [0, 0]; rows contiguous, ow apart
  int64_t ow;                // output columns
  int64_t c0, c1;            // columns [c0, c1) read only columns inside x for every tap
  const float* u = nullptr;  // axpy: u's element [0, 0] (rows contiguous, u_row apart)
  int64_t u_row = 0;
  float c = 0;
  bool axpy = false;
  bool stream = false;  // axpy: streaming stores (out is far larger than the caches)
};

struct Table {
  const char* name;  // "avx2" (or "x86-64" in a build without AVX2), "avx512"
  MapResolved (*map_kernel)(const MapInstr& ins);
  void (*stencil2d_rows)(const Stencil2d& s, int64_t lo, int64_t hi);
  // y[i] = a[i, :] . x for i < n, a's rows k long and lda apart (a small f32 matrix-vector
  // product, matmul.cpp): each row's 16 partial sums (element p in partial p mod 16) added by a
  // fixed tree, then the last k mod 16 elements in order, by fused multiply-adds.
  void (*gemv_f32)(const float* a, int64_t lda, const float* x, float* y, int64_t n, int64_t k);
  // One chunk of run_moments: sums shifted by p[0] (moments.cpp).
  Moments (*moments_f32)(const float* p, int64_t n);
  Moments (*moments_f64)(const double* p, int64_t n);
};

namespace base {  // the build's own instruction set: AVX2 (x86-64-v3)
extern const Table table;
}
namespace avx512 {
extern const Table table;
}

// The table of the instruction set in use (cpu::isa(), kernels.hpp).
const Table& table();

}  // namespace tapestry::cpu::vec
