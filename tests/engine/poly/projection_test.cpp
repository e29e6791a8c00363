#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "engine/poly/projection.hpp"

using namespace tapestry;
using namespace tapestry::poly;

namespace {

// The image by brute force: visit every point of the box.
Box brute_image(const Projection& p, const Box& box) {
  const int tr = p.tensor_rank();
  Box out(std::vector<int64_t>(tr, INT64_MAX), std::vector<int64_t>(tr, INT64_MIN));
  std::vector<int64_t> idx = box.lo;
  while (true) {
    for (int t = 0; t < tr; ++t) {
      int64_t c = p.b[t];
      for (int j = 0; j < p.space_rank; ++j) c += p.A[t][j] * idx[j];
      out.lo[t] = std::min(out.lo[t], c);
      out.hi[t] = std::max(out.hi[t], c + p.w[t] - 1);
    }
    int j = p.space_rank - 1;
    while (j >= 0 && idx[j] == box.hi[j]) idx[j] = box.lo[j], --j;
    if (j < 0) break;
    ++idx[j];
  }
  return out;
}

}  // namespace

TEST_CASE("engine.poly.projection.identity_and_select") {
  const Box block({0, 2, 4}, {1, 3, 7});
  CHECK(Projection::identity(3).image(block) == block);
  // matmul: A <- (i, k), B <- (k, j), Y <- (i, j) in space {i, j, k}.
  CHECK(Projection::select(3, {0, 2}).image(block) == Box({0, 4}, {1, 7}));
  CHECK(Projection::select(3, {2, 1}).image(block) == Box({4, 2}, {7, 3}));
  CHECK(Projection::select(3, {}).image(block) == Box::of_shape({}));
}

TEST_CASE("engine.poly.projection.negative_coefficients") {
  Projection p(1, 2);
  p.A[0] = {-1, 2};
  p.b[0] = 10;
  // min: -1*3 + 2*0 + 10 = 7, max: -1*1 + 2*2 + 10 = 13. The two corners lo and hi of
  // the box would give 10-1+0 = 9 and 10-3+4 = 11: wrong on both ends.
  const Box box({1, 0}, {3, 2});
  CHECK(p.image(box) == Box({7}, {13}));
  CHECK(p.image(box) == brute_image(p, box));

  Projection rev(1, 1);  // a reversal x[n-1-i]
  rev.A[0] = {-1};
  rev.b[0] = 9;
  CHECK(rev.image(Box({0}, {3})) == Box({6}, {9}));
}

TEST_CASE("engine.poly.projection.matches_brute_force") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coef(-3, 3), off(-5, 5), win(1, 4), lo(-3, 3), len(0, 3);
  for (int trial = 0; trial < 300; ++trial) {
    Projection p(2, 3);
    for (int t = 0; t < 2; ++t) {
      for (int j = 0; j < 3; ++j) p.A[t][j] = coef(rng);
      p.b[t] = off(rng);
      p.w[t] = win(rng);
    }
    Box box(std::vector<int64_t>(3), std::vector<int64_t>(3));
    for (int j = 0; j < 3; ++j) {
      box.lo[j] = lo(rng);
      box.hi[j] = box.lo[j] + len(rng);
    }
    CHECK(p.image(box) == brute_image(p, box));
  }
}

TEST_CASE("engine.poly.projection.windows") {
  Projection p(1, 1);
  p.A[0] = {2};
  p.w[0] = 3;  // y reads 2y .. 2y+2
  CHECK(p.image(Box({0}, {0})) == Box({0}, {2}));
  CHECK(p.image(Box({1}, {3})) == Box({2}, {8}));
  Projection whole(1, 1);  // coefficient 0, window = the dim: every block reads it all
  whole.w[0] = 6;
  CHECK(whole.image(Box({2}, {4})) == Box({0}, {5}));
}

TEST_CASE("engine.poly.projection.clipping") {
  // Input 1 of cat({4 rows}, {3 rows}) along dim 0: coordinate = y - 4.
  Projection p = Projection::identity(2);
  p.b[0] = -4;
  p.clip = true;
  const Shape in{3, 5};
  CHECK(p.image_clipped(Box({0, 0}, {3, 4}), in).empty());                 // none of it
  CHECK(p.image_clipped(Box({2, 0}, {5, 4}), in) == Box({0, 0}, {1, 4}));  // part
  CHECK(p.image_clipped(Box({0, 0}, {6, 4}), in) == Box::of_shape(in));    // all
  CHECK(p.slice(Box({0, 0}, {3, 4}), in).empty());
  CHECK(p.image(Box({0, 0}, {3, 4})) == Box({-4, 0}, {-1, 4}));  // unclipped: outside
  CHECK(p.image(Box::empty_box(2)).empty());
}

TEST_CASE("engine.poly.projection.slice_elements_closed_form") {
  Projection p(2, 3);
  p.A[0] = {1, 0, 0};
  p.A[1] = {0, -2, 1};
  p.w[1] = 3;
  const Box box({0, 0, 0}, {3, 1, 4});
  CHECK(p.slice_elements(box.extents()) == static_cast<double>(p.image(box).volume()));
}

TEST_CASE("engine.poly.projection.to_string") {
  Projection p(2, 2);
  p.A[0] = {2, 0};
  p.b[0] = -1;
  p.w[0] = 3;
  p.A[1] = {0, 1};
  CHECK(to_string(p, {"y", "x"}) == "(2*y-1+[0..2], x)");
  Projection q(1, 2);
  q.A[0] = {-1, 3};
  q.clip = true;
  CHECK(to_string(q, {"a", "b"}) == "(-a+3*b) clipped");
  CHECK(to_string(Projection(0, 1), {"a"}) == "()");
  CHECK(to_string(Projection(1, 1), {"a"}) == "(0)");
}
