#include "engine/poly/projection.hpp"

#include <algorithm>
#include <cstdlib>

#include "engine/ir/error.hpp"

namespace tapestry::poly {

Projection::Projection(int tensor_rank, int space_rank_)
    : space_rank(space_rank_),
      A(tensor_rank, std::vector<int64_t>(space_rank_, 0)),
      b(tensor_rank, 0),
      w(tensor_rank, 1) {
  internal_check(tensor_rank >= 0 && space_rank_ >= 0);
}

Projection Projection::identity(int rank) {
  Projection p(rank, rank);
  for (int t = 0; t < rank; ++t) p.A[t][t] = 1;
  return p;
}

Projection Projection::select(int space_rank, const std::vector<int>& dims) {
  Projection p(static_cast<int>(dims.size()), space_rank);
  for (size_t t = 0; t < dims.size(); ++t) {
    internal_check(dims[t] >= 0 && dims[t] < space_rank);
    p.A[t][dims[t]] = 1;
  }
  return p;
}

Box Projection::image(const Box& index_box) const {
  internal_check(index_box.rank() == space_rank);
  const int tr = tensor_rank();
  if (index_box.empty()) return Box::empty_box(tr);
  Box out{std::vector<int64_t>(tr), std::vector<int64_t>(tr)};
  for (int t = 0; t < tr; ++t) {
    internal_check(w[t] >= 1);
    // A linear function's extremes over a box are taken coordinate by coordinate:
    // a negative coefficient takes its minimum at the box's upper bound.
    int64_t lo = b[t], hi = b[t];
    for (int j = 0; j < space_rank; ++j) {
      const int64_t a = A[t][j];
      const int64_t at_lo = a * index_box.lo[j], at_hi = a * index_box.hi[j];
      lo += std::min(at_lo, at_hi);
      hi += std::max(at_lo, at_hi);
    }
    out.lo[t] = lo;
    out.hi[t] = hi + w[t] - 1;
  }
  return out;
}

Box Projection::image_clipped(const Box& index_box, const Shape& shape) const {
  internal_check(static_cast<int>(shape.size()) == tensor_rank());
  return intersect(image(index_box), Box::of_shape(shape));
}

Box Projection::slice(const Box& index_box, const Shape& shape) const {
  return clip ? image_clipped(index_box, shape) : image(index_box);
}

double Projection::slice_elements(const Shape& extents) const {
  internal_check(static_cast<int>(extents.size()) == space_rank);
  double n = 1;
  for (int t = 0; t < tensor_rank(); ++t) {
    int64_t e = w[t];
    for (int j = 0; j < space_rank; ++j) e += std::llabs(A[t][j]) * (extents[j] - 1);
    n *= static_cast<double>(e);
  }
  return n;
}

std::string to_string(const Projection& p, const std::vector<std::string>& dim_names) {
  internal_check(static_cast<int>(dim_names.size()) == p.space_rank);
  std::string s = "(";
  for (int t = 0; t < p.tensor_rank(); ++t) {
    if (t) s += ", ";
    std::string term;
    for (int j = 0; j < p.space_rank; ++j) {
      const int64_t a = p.A[t][j];
      if (a == 0) continue;
      if (!term.empty()) term += a > 0 ? "+" : "-";
      else if (a < 0) term += "-";
      if (std::llabs(a) != 1) term += cat_str(std::llabs(a), "*");
      term += dim_names[j];
    }
    if (p.b[t] != 0 || term.empty()) {
      if (!term.empty() && p.b[t] > 0) term += "+";
      term += std::to_string(p.b[t]);
    }
    if (p.w[t] > 1) term += cat_str("+[0..", p.w[t] - 1, "]");
    s += term;
  }
  s += ")";
  if (p.clip) s += " clipped";
  return s;
}

}  // namespace tapestry::poly
