// A 2-D matmul with a declared block-sparse operand (either, or both: x:declare{tiles,
// nonzero}) multiplies only the pairs of nonzero tiles that meet (packed_contract.hpp): the
// planner then sees, costs and shards only those products, and the result is declared
// block-sparse in the output tiles that had none.
#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/packed_contract.hpp"
#include "engine/ir/dtype.hpp"
#include "engine/ir/properties.hpp"

namespace tapestry::build {

NodeRef tile_matmul(const NodeRef& a, const NodeRef& b) {
  if (a->shape.size() != 2 || b->shape.size() != 2 || a->shape[1] != b->shape[0]) return nullptr;
  if (properties_of(a).tiles.empty() && properties_of(b).tiles.empty()) return nullptr;
  const DType t = promote(a->dtype, b->dtype);
  return structured_contract(cast(a, t), "ik", cast(b, t), "kj", "ij");
}

}  // namespace tapestry::build
