// Affine index projections: which tensor slice a box of index points touches.
//   Projection p = Projection::select(3, {0, 2});     // matmul's A <- (i, k) in space {i, j, k}
//   p.image(Box({0, 0, 0}, {1, 4, 7})) == Box({0, 0}, {1, 7})
//   p.slice(block, shape)       // image, clipped to the tensor when p.clip (cat, pad)
// For tensor dim t: coord = sum_j A[t][j] * idx[j] + b[t], plus a window of w[t] coordinates
// (stencils, and reshape groups that cannot be split). The image of a box is the exact
// bounding interval per tensor dim; with |A| > 1 (strided slices) it includes the
// coordinates the stride skips, which a block moves but never reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/shape.hpp"
#include "engine/poly/box.hpp"

namespace tapestry::poly {

struct Projection {
  int space_rank = 0;                   // index dims (A's columns), kept for rank-0 tensors
  std::vector<std::vector<int64_t>> A;  // A[t][j], one row per tensor dim
  std::vector<int64_t> b;               // offset per tensor dim
  std::vector<int64_t> w;               // window per tensor dim, >= 1
  bool clip = false;  // the image may leave the tensor (cat, pad): slices clip to its bounds

  Projection() = default;
  Projection(int tensor_rank, int space_rank);  // A = 0, b = 0, w = 1

  static Projection identity(int rank);
  // Tensor dim t follows index dim dims[t] with coefficient 1.
  static Projection select(int space_rank, const std::vector<int>& dims);

  int tensor_rank() const { return static_cast<int>(A.size()); }

  // Per tensor dim [min + b, max + b + w - 1] of the affine part over the box; empty box in,
  // empty box out (a rank-0 tensor has no empty box: that call is a bug).
  Box image(const Box& index_box) const;
  // The image intersected with [0, shape): may be empty (a cat block away from this input).
  Box image_clipped(const Box& index_box, const Shape& shape) const;
  // What a block needs of the tensor: image_clipped when clip, else image.
  Box slice(const Box& index_box, const Shape& shape) const;

  // Closed form of the slice size for a block with these extents (all >= 1), unclipped:
  // prod_t (sum_j |A[t][j]| * (e_j - 1) + w[t]).
  double slice_elements(const Shape& extents) const;

  // Whether tensor dim t depends on index dim j.
  bool uses(int t, int j) const { return A[t][j] != 0; }

  bool operator==(const Projection&) const = default;
};

// "(2*y-1+[0..2], x)" given the index dims' names; "()" for a rank-0 tensor.
std::string to_string(const Projection& p, const std::vector<std::string>& dim_names);

}  // namespace tapestry::poly
