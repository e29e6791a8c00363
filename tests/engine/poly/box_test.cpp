#include <doctest/doctest.h>

#include "engine/poly/box.hpp"

using namespace tapestry;
using namespace tapestry::poly;

TEST_CASE("engine.poly.box.basics") {
  const Box b({0, 2}, {3, 5});
  CHECK(to_string(b) == "[1..4]x[3..6]");
  CHECK(b.rank() == 2);
  CHECK(b.volume() == 16);
  CHECK(b.extents() == Shape{4, 4});
  CHECK_FALSE(b.empty());
  CHECK(Box::of_shape({2, 3}) == Box({0, 0}, {1, 2}));
  CHECK(b.contains_point({3, 2}));
  CHECK_FALSE(b.contains_point({4, 2}));
}

TEST_CASE("engine.poly.box.rank_zero_is_one_point") {
  const Box s = Box::of_shape({});
  CHECK(s.rank() == 0);
  CHECK(s.volume() == 1);
  CHECK_FALSE(s.empty());
  CHECK(to_string(s) == "[]");
  CHECK(intersect(s, s) == s);
  CHECK(s.contains(s));
}

TEST_CASE("engine.poly.box.empty_boxes") {
  const Box e = Box::empty_box(2);
  CHECK(e.empty());
  CHECK(e.volume() == 0);
  CHECK(e == Box({5, 0}, {4, 9}));  // every empty box of a rank is the same set
  CHECK_FALSE(e == Box::empty_box(1));
  CHECK(Box({0, 0}, {3, 3}).contains(e));
  CHECK(Box({3}, {2}).extent(0) == 0);
}

TEST_CASE("engine.poly.box.intersect_and_contains") {
  const Box a({0, 0}, {3, 3}), b({2, 1}, {5, 2});
  CHECK(intersect(a, b) == Box({2, 1}, {3, 2}));
  CHECK(overlaps(a, b));
  CHECK_FALSE(overlaps(a, Box({4, 0}, {5, 3})));
  CHECK(intersect(a, Box({4, 0}, {5, 3})).empty());
  CHECK(a.contains(Box({1, 1}, {2, 3})));
  CHECK_FALSE(a.contains(b));
}

TEST_CASE("engine.poly.box.subtract_gives_disjoint_rest") {
  const Box a({0, 0}, {5, 5}), hole({2, 1}, {3, 4});
  const std::vector<Box> rest = subtract(a, hole);
  int64_t v = 0;
  for (size_t i = 0; i < rest.size(); ++i) {
    v += rest[i].volume();
    CHECK_FALSE(overlaps(rest[i], hole));
    CHECK(a.contains(rest[i]));
    for (size_t k = i + 1; k < rest.size(); ++k) CHECK_FALSE(overlaps(rest[i], rest[k]));
  }
  CHECK(v == a.volume() - hole.volume());
  CHECK(subtract(a, a).empty());
  CHECK(subtract(a, Box({9, 9}, {9, 9})) == std::vector<Box>{a});
}

TEST_CASE("engine.poly.box.covered_by") {
  const Box t({0, 0}, {3, 3});
  CHECK(covered_by(t, {Box({0, 0}, {1, 3}), Box({2, 0}, {3, 3})}));
  CHECK(covered_by(t, {Box({0, 0}, {2, 3}), Box({1, 0}, {3, 3})}));  // overlaps are fine
  CHECK_FALSE(covered_by(t, {Box({0, 0}, {1, 3}), Box({3, 0}, {3, 3})}));
  // Row 0 and column 0 of a 2x2: right count of points, full bounding box, still a hole.
  CHECK_FALSE(covered_by(Box({0, 0}, {1, 1}), {Box({0, 0}, {0, 1}), Box({0, 0}, {1, 0})}));
  CHECK(covered_by(Box::empty_box(2), {}));
  CHECK(covered_by(Box::of_shape({}), {Box::of_shape({})}));
  CHECK_FALSE(covered_by(Box::of_shape({}), {}));
}

TEST_CASE("engine.poly.coords.inline_and_spilled_behave_like_a_vector") {
  using tapestry::poly::Coords;
  Coords a{1, 2, 3};
  CHECK(a.size() == 3);
  CHECK(a[1] == 2);
  for (int64_t v = 4; v <= 9; ++v) a.push_back(v);  // past the 6 inline entries: spills to the heap
  REQUIRE(a.size() == 9);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == static_cast<int64_t>(i) + 1);
  Coords b = a;  // copy of a spilled one
  CHECK(b == a);
  b[8] = 0;
  CHECK_FALSE(b == a);
  Coords c = std::move(b);
  CHECK(c.size() == 9);
  CHECK(c[8] == 0);
  Coords d{5};
  d = a;  // inline grows to heap
  CHECK(d == a);
  d = Coords{7, 8};  // and back to two entries
  CHECK(d.size() == 2);
  CHECK(d == Coords{7, 8});
  const std::vector<int64_t> v = d;
  CHECK(v == std::vector<int64_t>{7, 8});
  Coords e(v);
  CHECK(e == d);
  e.resize(4, -1);
  CHECK(std::vector<int64_t>(e) == std::vector<int64_t>{7, 8, -1, -1});
  e.assign(2, 3);
  CHECK(std::vector<int64_t>(e) == std::vector<int64_t>{3, 3});
  CHECK(Coords{} == Coords{});
  CHECK_FALSE(Coords{1} == Coords{1, 1});
  // A Box of many dims keeps working past the inline size.
  tapestry::poly::Box big(Coords(8, 0), Coords(8, 1));
  CHECK(big.volume() == 256);
}
