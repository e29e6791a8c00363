#include <doctest/doctest.h>

#include "engine/ir/error.hpp"
#include "engine/ir/shape.hpp"

using namespace tapestry;

TEST_CASE("engine.ir.shape.basics") {
  CHECK(numel({}) == 1);
  CHECK(numel({3, 4}) == 12);
  CHECK(shape_str({3, 4}) == "{3,4}");
  CHECK(shape_str({}) == "{}");
  CHECK(contiguous_strides({2, 3, 4}) == Strides{12, 4, 1});
}

TEST_CASE("engine.ir.shape.broadcast") {
  CHECK(broadcast_shapes({3, 1}, {4}) == Shape{3, 4});
  CHECK(broadcast_shapes({}, {2, 2}) == Shape{2, 2});
  CHECK(broadcast_shapes({5, 1, 3}, {4, 1}) == Shape{5, 4, 3});
  try {
    broadcast_shapes({3}, {4});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("{3} and {4}") != std::string::npos);
  }
  CHECK(broadcastable_to({1, 3}, {2, 2, 3}));
  CHECK_FALSE(broadcastable_to({2, 3}, {3, 3}));
}

TEST_CASE("engine.ir.shape.normalize_dim") {
  CHECK(normalize_dim(1, 3) == 0);
  CHECK(normalize_dim(-1, 3) == 2);
  CHECK(normalize_dim(-3, 3) == 0);
  CHECK_THROWS_AS(normalize_dim(0, 3), Error);
  CHECK_THROWS_AS(normalize_dim(4, 3), Error);
  CHECK_THROWS_AS(normalize_dim(-4, 3), Error);
}
