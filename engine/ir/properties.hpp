// What is known of a tensor's structure without computing it: its permutational symmetry
// groups, and whether it is all zeros. Declared by x:declare{...} (a Declare node carries them,
// so they live in the graph: lazy expressions, tp.env bindings and plans keep them), known of
// creators (tp.zeros, tp.eye, constants), and carried through the ops that provably keep them.
//   Properties p = properties_of(tp_node);   // p.groups: {anti, dims}; p.zero
//   int64_t b = stored_bytes(*node);          // the bytes its independent elements take
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/attrs.hpp"
#include "engine/ir/node.hpp"

namespace tapestry {

struct Properties {
  std::vector<SymmetryGroup> groups;  // disjoint, dims ascending (0-based)
  bool zero = false;                  // every element is 0 (tp.zeros)
  bool diagonal = false;              // 2-D, zero off the main diagonal (tp.eye)
  bool uniform = false;               // every element equal (a constant, maybe broadcast)
  std::vector<int64_t> tiles;         // block sparsity (PropertiesAttrs): tile extents, or empty
  std::vector<bool> nonzero;          // per tile of the grid, row-major
  // The packed storage of a tensor with these properties (a named tensor's stored form,
  // engine/ir/build/packed.hpp): nothing is claimed of this tensor's own dims.
  PropertiesAttrs packed_of;
  bool empty() const { return groups.empty() && tiles.empty() && !zero && !diagonal; }
  PropertiesAttrs declared() const {
    return packed_of.packed.empty() ? PropertiesAttrs{groups, tiles, nonzero, {}} : packed_of;
  }
};

// Derived from the graph alone, visiting at most 64 nodes below n (never the whole graph;
// what lies deeper is not claimed).
Properties properties_of(const NodeRef& n);

// The number of independent elements: a symmetric group of k dims of size m holds
// C(m+k-1, k) of the m^k, an antisymmetric one C(m, k); a zero tensor none; a diagonal one m;
// a block-sparse one the elements of its nonzero tiles.
int64_t stored_elements(const NodeRef& n);

// "symmetric{1,2}", "antisymmetric{1,2}" (1-based), for messages and x:properties().
std::string group_str(const SymmetryGroup& g);

// The tile grid: ceil(shape / tiles) per dim.
Shape tile_grid(const Shape& shape, const std::vector<int64_t>& tiles);

}  // namespace tapestry
