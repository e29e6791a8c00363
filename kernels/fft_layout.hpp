// The lines of a 1-D FFT along one dim of contiguous row-major blocks, as calls of a transform
// that takes one batch stride (cuFFT's advanced layout, kernels/cuda/fft.cpp):
//   FftLayout l = fft_layout({4, 6, 5}, {4, 4, 5}, 1);   // r2c along dim 1: 6 reals -> 4 values
//   for (c < l.calls) for (b < l.batch) for (j < line length)
//     in[c * l.in_step + b * l.in_dist + j * l.stride] ... out[c * l.out_step + b * l.out_dist + j *
//     l.stride]
// Host logic only (no CUDA), so it is tested on the CPU (tests/gpu/host_test.cpp).
#pragma once

#include <cstdint>

#include "engine/ir/error.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry {

struct FftLayout {
  int64_t n = 0;                      // the transform's logical length: the real side's for r2c and c2r
  int64_t stride = 1;                 // between a line's elements, in and out (the dims after dim)
  int64_t batch = 1;                  // lines per call
  int64_t in_dist = 0, out_dist = 0;  // between a call's consecutive lines
  int64_t calls = 1;                  // calls, each starting in_step / out_step further on
  int64_t in_step = 0, out_step = 0;
};

// in and out: the blocks' shapes, equal but along dim (r2c: n in, n/2+1 out; c2r the other way).
// The dims before dim and those after it are each one batch; the larger is the calls' batch and
// the other their count, so a block of many short rows is one call, not one per row.
inline FftLayout fft_layout(const Shape& in, const Shape& out, int dim) {
  internal_check(in.size() == out.size() && dim >= 0 && dim < static_cast<int>(in.size()));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < static_cast<int>(in.size()); ++d) {
    internal_check(d == dim || in[d] == out[d]);
    if (d < dim) outer *= in[d];
    if (d > dim) inner *= in[d];
  }
  const int64_t li = in[dim], lo = out[dim];
  FftLayout l;
  l.n = li > lo ? li : lo;
  internal_check(li == lo || (li > lo ? lo : li) == l.n / 2 + 1);
  l.stride = inner;
  if (outer >= inner) {  // lines one after another within a call; the inner offsets are calls
    l.batch = outer;
    l.in_dist = li * inner;
    l.out_dist = lo * inner;
    l.calls = inner;
    l.in_step = 1;
    l.out_step = 1;
  } else {  // side by side (interleaved) within a call; each row of lines a call
    l.batch = inner;
    l.in_dist = 1;
    l.out_dist = 1;
    l.calls = outer;
    l.in_step = li * inner;
    l.out_step = lo * inner;
  }
  return l;
}

}  // namespace tapestry
