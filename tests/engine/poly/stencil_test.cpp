#include <doctest/doctest.h>

#include "engine/ir/error.hpp"
#include "engine/poly/stencil.hpp"

using namespace tapestry;
using namespace tapestry::poly;

namespace {
// Rows that two neighbouring output blocks both read: the halo each must fetch.
int64_t halo(const Projection& p, const Box& a, const Box& b) {
  return intersect(p.image(a), p.image(b)).volume();
}
}  // namespace

TEST_CASE("engine.poly.stencil.halo_is_kernel_minus_one") {
  for (int64_t r = 1; r <= 5; ++r) {
    const Projection p = conv_input(1, 1, r);
    const Box top({0}, {3}), bottom({4}, {7});
    CHECK(p.image(top) == Box({0}, {3 + r - 1}));
    CHECK(p.image(bottom) == Box({4}, {7 + r - 1}));
    CHECK(halo(p, top, bottom) == r - 1);
  }
}

TEST_CASE("engine.poly.stencil.stride_and_dilation") {
  const Projection s2 = conv_input(2, 1, 3);  // y reads 2y .. 2y+2
  CHECK(s2.image(Box({0}, {3})) == Box({0}, {8}));
  CHECK(s2.image(Box({4}, {7})) == Box({8}, {16}));
  CHECK(halo(s2, Box({0}, {3}), Box({4}, {7})) == 1);  // r - s
  const Projection d2 = conv_input(1, 2, 3);           // taps y, y+2, y+4
  CHECK(d2.w[0] == 5);
  CHECK(halo(d2, Box({0}, {3}), Box({4}, {7})) == 4);  // dilation * (r - 1)
}

TEST_CASE("engine.poly.stencil.taps_as_an_index_dim") {
  // Kernel tap r as a (reduction) index dim: the dilation is its coefficient. Over all taps
  // the image equals the windowed form's.
  const Projection taps = conv_input_taps(2, 3);
  const Projection win = conv_input(2, 3, 4);
  CHECK(taps.image(Box({1, 0}, {5, 3})) == win.image(Box({1}, {5})));
  CHECK(taps.image(Box({1, 2}, {1, 2})) == Box({8}, {8}));  // one tap of one row
}

TEST_CASE("engine.poly.stencil.padding_clips") {
  // A "same" 3-point stencil over 8 rows: pad 1 on each side.
  const WindowDim d{1, 1, 3, 1, 1};
  CHECK(window_output_extent(8, d) == 8);
  const Projection p = window_input({d});
  CHECK(p.clip);
  const Shape in{8};
  CHECK(p.image(Box({0}, {3})) == Box({-1}, {4}));
  CHECK(p.slice(Box({0}, {3}), in) == Box({0}, {4}));
  CHECK(p.slice(Box({4}, {7}), in) == Box({3}, {7}));
  CHECK(window_output_extent(7, WindowDim{2, 1, 3, 0, 0}) == 3);
  CHECK_THROWS_AS(window_output_extent(2, WindowDim{1, 1, 3, 0, 0}), Error);
  CHECK_THROWS_AS(conv_input(0, 1, 3), Error);
}

TEST_CASE("engine.poly.stencil.pad_is_a_negative_offset") {
  const Projection p = pad_input({2, 0});  // y[i, j] = x[i - 2, j], zero outside
  const Shape in{3, 4};
  CHECK(p.b == std::vector<int64_t>{-2, 0});
  CHECK(p.slice(Box({0, 0}, {1, 3}), in).empty());  // rows that are all padding read nothing
  CHECK(p.slice(Box({1, 0}, {4, 3}), in) == Box({0, 0}, {2, 3}));
  CHECK(p.slice(Box({0, 0}, {6, 3}), in) == Box::of_shape(in));
}
