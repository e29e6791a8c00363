// Integer boxes: the blocks of an index space and the slices of a tensor.
//   Box b({0, 2}, {3, 5});          // rows 0..3, columns 2..5 inclusive: to_string(b) == "[1..4]x[3..6]"
//   b.volume() == 16;  intersect(b, Box::of_shape({2, 4})) == Box({0, 2}, {1, 3})
//   covered_by(b, {left, right})    // true when the union of the pieces holds every point of b
// Bounds are inclusive so that a one-element slice is [i..i]; a rank-0 box is the single
// point of a scalar and is never empty.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "engine/ir/shape.hpp"
#include "engine/poly/coords.hpp"

namespace tapestry::poly {

struct Box {
  Coords lo, hi;  // inclusive, one entry per dimension

  Box() = default;
  Box(Coords lo_, Coords hi_);

  static Box of_shape(const Shape& shape);  // [0..s-1] per dimension
  static Box empty_box(int rank);           // [0..-1] per dimension (rank >= 1)

  int rank() const { return static_cast<int>(lo.size()); }
  bool empty() const;           // some dimension has lo > hi
  int64_t extent(int d) const;  // hi - lo + 1, 0 when empty
  Shape extents() const;
  int64_t volume() const;                 // number of points, 0 when empty
  bool contains(const Box& inner) const;  // an empty inner box is contained everywhere
  bool contains_point(const std::vector<int64_t>& p) const;

  bool operator==(const Box& o) const;  // all empty boxes of one rank are equal
};

Box intersect(const Box& a, const Box& b);
bool overlaps(const Box& a, const Box& b);

// The points of a outside b, as at most 2*rank disjoint boxes (none when b covers a).
std::vector<Box> subtract(const Box& a, const Box& b);

// The points of `target` in none of `pieces`, as disjoint boxes (overlaps among pieces allowed).
std::vector<Box> uncovered(const Box& target, const std::vector<Box>& pieces);
// Whether every point of `target` lies in at least one of `pieces`.
bool covered_by(const Box& target, const std::vector<Box>& pieces);

// 1-based and inclusive, as Lua indexes (every inspection output is): Box({0, 2}, {3, 5}) is
// "[1..4]x[3..6]"; "[]" for the rank-0 point, "[2..1]" style bounds when empty.
std::string to_string(const Box& b);
std::ostream& operator<<(std::ostream& os, const Box& b);

}  // namespace tapestry::poly
