#include "engine/poly/box.hpp"

#include <algorithm>
#include <ostream>

#include "engine/ir/error.hpp"

namespace tapestry::poly {

Box::Box(Coords lo_, Coords hi_) : lo(std::move(lo_)), hi(std::move(hi_)) {
  internal_check(lo.size() == hi.size());
}

Box Box::of_shape(const Shape& shape) {
  Box b;
  b.lo.assign(shape.size(), 0);
  for (int64_t s : shape) b.hi.push_back(s - 1);
  return b;
}

Box Box::empty_box(int rank) {
  // A rank-0 box is a point and cannot be empty; asking for one is a bug.
  internal_check(rank >= 1);
  return Box(std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, -1));
}

bool Box::empty() const {
  for (size_t d = 0; d < lo.size(); ++d)
    if (lo[d] > hi[d]) return true;
  return false;
}

int64_t Box::extent(int d) const {
  internal_check(d >= 0 && d < rank());
  return std::max<int64_t>(0, hi[d] - lo[d] + 1);
}

Shape Box::extents() const {
  Shape e(lo.size());
  for (int d = 0; d < rank(); ++d) e[d] = extent(d);
  return e;
}

int64_t Box::volume() const {
  int64_t v = 1;
  for (int d = 0; d < rank(); ++d) v *= extent(d);
  return v;
}

bool Box::contains(const Box& inner) const {
  internal_check(inner.rank() == rank());
  if (inner.empty()) return true;
  for (int d = 0; d < rank(); ++d)
    if (inner.lo[d] < lo[d] || inner.hi[d] > hi[d]) return false;
  return true;
}

bool Box::contains_point(const std::vector<int64_t>& p) const {
  internal_check(static_cast<int>(p.size()) == rank());
  for (int d = 0; d < rank(); ++d)
    if (p[d] < lo[d] || p[d] > hi[d]) return false;
  return true;
}

bool Box::operator==(const Box& o) const {
  if (rank() != o.rank()) return false;
  const bool e = empty(), oe = o.empty();
  if (e || oe) return e && oe;
  return lo == o.lo && hi == o.hi;
}

Box intersect(const Box& a, const Box& b) {
  internal_check(a.rank() == b.rank());
  Box r = a;
  for (int d = 0; d < a.rank(); ++d) {
    r.lo[d] = std::max(a.lo[d], b.lo[d]);
    r.hi[d] = std::min(a.hi[d], b.hi[d]);
  }
  return r;
}

bool overlaps(const Box& a, const Box& b) { return !intersect(a, b).empty(); }

std::vector<Box> subtract(const Box& a, const Box& b) {
  const Box common = intersect(a, b);
  if (common.empty()) return a.empty() ? std::vector<Box>{} : std::vector<Box>{a};
  // Peel one slab below and one above the common part per dimension; what remains
  // of `a` shrinks to `common`, so the slabs are disjoint and cover a \ b.
  std::vector<Box> out;
  Box rest = a;
  for (int d = 0; d < a.rank(); ++d) {
    if (rest.lo[d] < common.lo[d]) {
      Box s = rest;
      s.hi[d] = common.lo[d] - 1;
      out.push_back(s);
    }
    if (rest.hi[d] > common.hi[d]) {
      Box s = rest;
      s.lo[d] = common.hi[d] + 1;
      out.push_back(s);
    }
    rest.lo[d] = common.lo[d];
    rest.hi[d] = common.hi[d];
  }
  return out;
}

std::vector<Box> uncovered(const Box& target, const std::vector<Box>& pieces) {
  std::vector<Box> left;
  if (!target.empty()) left.push_back(target);
  for (const Box& p : pieces) {
    if (left.empty()) break;
    std::vector<Box> next;
    for (const Box& l : left) {
      std::vector<Box> s = subtract(l, p);
      next.insert(next.end(), s.begin(), s.end());
    }
    left = std::move(next);
  }
  return left;
}

bool covered_by(const Box& target, const std::vector<Box>& pieces) {
  return uncovered(target, pieces).empty();
}

std::string to_string(const Box& b) {
  if (b.rank() == 0) return "[]";
  std::string s;
  for (int d = 0; d < b.rank(); ++d) {
    if (d) s += "x";
    s += cat_str("[", b.lo[d] + 1, "..", b.hi[d] + 1, "]");
  }
  return s;
}

std::ostream& operator<<(std::ostream& os, const Box& b) { return os << to_string(b); }

}  // namespace tapestry::poly
