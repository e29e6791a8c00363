// Contractions that exploit declared properties (docs/properties.md), as ordinary graph:
//   NodeRef y = build::structured_contract(a, "abij", b, "ijcd", "abcd");  // nullptr: no gain
// - Block sparsity (either operand, or both): only pairs of nonzero tiles that agree on the
//   shared letters are multiplied; an output tile with no pair is zeros, and the result is
//   declared block-sparse in those tiles.
// - Symmetry: a group summed in both operands (the same letters, both symmetric or both
//   antisymmetric) is summed over its stored tiles only, each weighted by how many tiles it
//   stands for (2 off the diagonal for a pair); a group of one operand whose letters all stay
//   in the output is computed for its stored tiles only, and the result is the unpack of
//   them (packed.hpp), declared with that group. Both go through one einsum of the packed
//   operands, so the planner costs and shards exactly that work.
// einsum's pairwise steps, tensordot and matmul call it.
#pragma once

#include <string>

#include "engine/ir/node.hpp"

namespace tapestry::build {

// a's dims carry the letters la, b's lb; `out` lists the result's letters (each of la or lb;
// letters of both not in out are summed). Both operands have the result's dtype.
NodeRef structured_contract(const NodeRef& a, const std::string& la, const NodeRef& b, const std::string& lb,
                            const std::string& out);

}  // namespace tapestry::build
