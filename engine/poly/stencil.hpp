// Projections for ops that come later (pad, stencil, conv), ready for their signatures.
//   Projection p = conv_input(/*stride=*/1, /*dilation=*/1, /*kernel=*/3);  // x <- y + [0..2]
//   p.image(Box({0}, {3})) == Box({0}, {5})    // rows 0..3 of the output read rows 0..5
//   window_input({{2, 1, 3, 1, 1}, {2, 1, 3, 1, 1}})  // a 3x3, stride 2, pad 1 conv over {y, x}
// A split of the output rows makes neighbouring blocks read overlapping input rows: the halo
// (dilation*(kernel-1) rows for stride 1) follows from the window, it is never special-cased.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/poly/projection.hpp"

namespace tapestry::poly {

// One windowed tensor dim: output position y reads stride*y - pad_before + dilation*r, r < kernel;
// coordinates in the padding (before 0 or at/after n) read as the pad value.
struct WindowDim {
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t kernel = 1;
  int64_t pad_before = 0;
  int64_t pad_after = 0;
};

// Input of a 1-D stencil over space {y}: coefficient = stride, window = the dilated kernel
// extent dilation*(kernel-1)+1. The kernel is a window, not an index dim.
Projection conv_input(int64_t stride, int64_t dilation, int64_t kernel);

// The same access with the kernel tap as an index dim (space {y, r}): coord = stride*y +
// dilation*r, window 1. Use it when the taps are summed as a reduction dim (conv as a
// contraction), so that r can be split like matmul's k.
Projection conv_input_taps(int64_t stride, int64_t dilation);

// N-D windowed input over space {one dim per tensor dim}; clipped when any dim pads, since a
// padded block may touch coordinates outside the tensor (they read as the pad value).
Projection window_input(const std::vector<WindowDim>& dims);

// Zero padding by `before` elements at the start of each dim: x[y - before], clipped.
Projection pad_input(const std::vector<int64_t>& before);

// Output extent of a windowed dim over an input of n: floor((n + pads - span) / stride) + 1
// with span = dilation*(kernel-1)+1; user error if the window does not fit.
int64_t window_output_extent(int64_t n, const WindowDim& d);

}  // namespace tapestry::poly
