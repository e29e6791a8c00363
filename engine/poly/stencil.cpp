#include "engine/poly/stencil.hpp"

#include "engine/ir/error.hpp"

namespace tapestry::poly {

namespace {
void check_window(const WindowDim& d) {
  user_check(d.stride >= 1, "stride must be positive, got ", d.stride);
  user_check(d.dilation >= 1, "dilation must be positive, got ", d.dilation);
  user_check(d.kernel >= 1, "kernel size must be positive, got ", d.kernel);
  user_check(d.pad_before >= 0 && d.pad_after >= 0, "padding must not be negative, got ", d.pad_before,
             " and ", d.pad_after);
}
int64_t span(const WindowDim& d) { return d.dilation * (d.kernel - 1) + 1; }
}  // namespace

Projection conv_input(int64_t stride, int64_t dilation, int64_t kernel) {
  return window_input({WindowDim{stride, dilation, kernel, 0, 0}});
}

Projection conv_input_taps(int64_t stride, int64_t dilation) {
  check_window(WindowDim{stride, dilation, 1, 0, 0});
  Projection p(1, 2);
  p.A[0] = {stride, dilation};
  return p;
}

Projection window_input(const std::vector<WindowDim>& dims) {
  const int r = static_cast<int>(dims.size());
  Projection p(r, r);
  for (int t = 0; t < r; ++t) {
    check_window(dims[t]);
    p.A[t][t] = dims[t].stride;
    p.b[t] = -dims[t].pad_before;
    // The window spans the dilated kernel; with dilation > 1 it includes the skipped rows,
    // the same over-approximation a strided slice makes.
    p.w[t] = span(dims[t]);
    p.clip = p.clip || dims[t].pad_before > 0 || dims[t].pad_after > 0;
  }
  return p;
}

Projection pad_input(const std::vector<int64_t>& before) {
  const int r = static_cast<int>(before.size());
  Projection p = Projection::identity(r);
  for (int t = 0; t < r; ++t) {
    user_check(before[t] >= 0, "padding must not be negative, got ", before[t]);
    p.b[t] = -before[t];
  }
  p.clip = true;
  return p;
}

int64_t window_output_extent(int64_t n, const WindowDim& d) {
  check_window(d);
  const int64_t room = n + d.pad_before + d.pad_after - span(d);
  user_check(room >= 0, "a window of ", span(d), " does not fit in ", n, " elements plus padding");
  return room / d.stride + 1;
}

}  // namespace tapestry::poly
