// Polyhedral signatures: everything the planner knows about an operation.
//   Signature s = signature_of(*node);          // index space + one projection per operand
//   Box need = s.input_slice(0, block);         // the slice of input 0 a block reads
//   if (s.splits_reduction(block)) ...          // its output is a partial: a combine must merge it
// The planner never looks at the op itself; a new op needs only a case in signature_of
// (signature_of.cpp fails to compile without one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/node.hpp"
#include "engine/poly/box.hpp"
#include "engine/poly/projection.hpp"
#include "kernels/monoid.hpp"

namespace tapestry::poly {

// What merges partial results of a split reduction dim: a Monoid (kernels/monoid.hpp, its
// cases are Monoid's shifted by one), or ArgMax/ArgMin, whose partials are (value, global flat
// index) pairs: the larger (smaller) value wins, ties go to the smaller index ("the first max").
enum class CombineKind : uint8_t {
  None,
  Sum = 1 + uint8_t(Monoid::Sum),
  Prod = 1 + uint8_t(Monoid::Prod),
  Max = 1 + uint8_t(Monoid::Max),
  Min = 1 + uint8_t(Monoid::Min),
  And = 1 + uint8_t(Monoid::And),
  Or = 1 + uint8_t(Monoid::Or),
  ArgMax,
  ArgMin
};
constexpr CombineKind combine_of(Monoid m) { return CombineKind(1 + uint8_t(m)); }
constexpr std::optional<Monoid> monoid_of(CombineKind c) {
  if (c == CombineKind::None || c >= CombineKind::ArgMax) return std::nullopt;
  return Monoid(uint8_t(c) - 1);
}
std::string_view combine_name(CombineKind c);

struct IndexDim {
  enum Kind : uint8_t { Parallel, Reduction };
  std::string name;
  int64_t extent = 1;
  Kind kind = Parallel;
  CombineKind combine = CombineKind::None;  // set exactly for reduction dims
  bool splittable = true;                   // false: every block spans the whole extent
};

// One operand: the tensor it is, and how index points reach it.
struct Access {
  Projection proj;
  Shape shape;
  DType dtype = DType::F32;
  double bytes() const;  // of the whole tensor
};

struct Signature {
  std::vector<IndexDim> space;
  std::vector<Access> inputs;  // in the node's input order
  Access output;
  double flops_per_point = 0;  // per index point; the cost of a block is this times its volume

  int rank() const { return static_cast<int>(space.size()); }
  Box space_box() const;
  Shape extents() const;
  std::vector<std::string> dim_names() const;

  // The slice of input i (of the output) a block touches, clipped where the projection says.
  Box input_slice(size_t i, const Box& block) const;
  Box output_slice(const Box& block) const;

  // The combine of the reduction dims (one per op), None when the op has none.
  CombineKind combine() const;
  // Whether the block covers less than the whole extent of some reduction dim, so that its
  // output is a partial result.
  bool splits_reduction(const Box& block) const;
};

// The signature of one node of the abstract graph.
Signature signature_of(const Node& n);

// Structural consistency: ranks agree, windows >= 1, reductions have a combine, the image of
// the whole space is the output's full shape and lies within each input (exactly its full
// shape unless the input is a strided/offset view or clipped). "" when consistent.
std::string signature_problem(const Signature& s);

// "space {i:4, j:5, k:3 sum}; in0 (i, k); in1 (k, j); out (i, j); 2 flops/point" — for tp.explain.
std::string to_string(const Signature& s);

}  // namespace tapestry::poly
