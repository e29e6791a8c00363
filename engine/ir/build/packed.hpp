// Packed storage of declared tensors, as graph: a packed tensor P and an unpack made of views.
//   const auto pk = build::packing_of(x->shape, properties_of(x).declared());  // nullopt: dense
//   NodeRef p = build::pack(x, *pk);      // P: the stored tiles stacked, {Q..., tile dims}
//   NodeRef y = build::unpack(p, *pk);    // x's values again (declared), from views of P
// A symmetric or antisymmetric group of k dims of size n is cut into g tiles of b per dim; only
// the tiles with sorted tile indices (I1 <= ... <= Ik) are stored, one per index of a packed dim
// of size Q = C(g+k-1, k); a tile with unsorted indices is the stored one permuted (negated by
// an odd permutation when antisymmetric, conjugated by a swap when Hermitian). Several groups give one packed
// dim each, in the order of their first dims, ahead of the tensor's dims (group dims shrunk to b). A
// block-sparse tensor stores its nonzero tiles stacked, {nnz, t1, t2, ...}; its zero tiles are generated
// where they are read. Edge tiles are padded with zeros (so every tile has one shape) and the
// padding is clipped away by the unpack: every producer of a P keeps its padding zero.
// Everything is slices, reshapes, permutes, negations, zeros and cats, so the planner shards
// packed tensors and reads only the tiles a block needs, with no kernel of their own.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "engine/ir/attrs.hpp"
#include "engine/ir/node.hpp"
#include "engine/ir/op.hpp"

namespace tapestry::build {

struct PackedGroup {
  std::vector<int> dims;  // ascending, 0-based dims of the dense tensor
  bool anti = false;
  bool herm = false;                                          // Hermitian: a swap conjugates
  int64_t n = 0, b = 0, g = 0;                                // size, tile extent, tiles per dim (g * b >= n)
  std::vector<std::vector<int64_t>> stored;                   // the sorted tile tuples, in packed order
  int64_t index_of(std::vector<int64_t> sorted_tuple) const;  // its packed index
  bool operator==(const PackedGroup& o) const {
    return dims == o.dims && anti == o.anti && herm == o.herm && b == o.b && n == o.n;
  }
};

struct Packing {
  Shape shape;                      // the dense shape
  std::vector<PackedGroup> groups;  // symmetry packing (empty when block-sparse)
  std::vector<int64_t> tiles;       // block sparsity: tile extents, and the nonzero tiles
  std::vector<int64_t> nonzero;     // (row-major indices into the tile grid), in packed order
  std::vector<bool> mask;           // per tile of the grid: stored
  // Block-sparse: the symmetry groups also declared (not packed again, but still declared on the
  // unpack); not part of the layout (==).
  std::vector<SymmetryGroup> also;
  Shape packed_shape() const;
  bool padded() const;  // some edge tile is padded
  PropertiesAttrs declared() const;
  bool operator==(const Packing& o) const {
    return shape == o.shape && groups == o.groups && tiles == o.tiles && mask == o.mask;
  }
};

// The tile extent b for a group of k dims of size n: the one whose stored tiles (padding
// included) are fewest, with at most a bounded number of tiles in the unpack (16 per dim for
// pairs: a symmetric 256^2 tensor stores 136 of 256 tiles of 16^2, 0.53x dense). An
// antisymmetric group in tiles of one element stores only strictly increasing tuples (the
// others are zero), C(n, k) elements.
int64_t group_tile(int64_t n, int64_t k, bool anti);
PackedGroup packed_group(const SymmetryGroup& g, int64_t n);

// How a tensor of this shape with these properties is stored packed: block-sparse tiles when
// declared (and some tile is zero), else its symmetry groups; nullopt when packing saves nothing.
std::optional<Packing> packing_of(const Shape& shape, const PropertiesAttrs& p);

NodeRef pack(const NodeRef& x, const Packing& pk);    // P (x's own P when x is unpack(P))
NodeRef unpack(const NodeRef& p, const Packing& pk);  // declared (trusted) with pk's properties
// P when x is exactly unpack(P, pk) (built by unpack, so hash-consing makes it the same node),
// else nullptr.
NodeRef packed_source(const NodeRef& x, const Packing& pk);
// The packing x is the unpack of, with its P, if any: x is a Declare over an unpack.
struct Unpacked {
  Packing pk;
  NodeRef p;
};
std::optional<Unpacked> unpacked(const NodeRef& x);

// The tile of x at index `tile` of the grid of `tiles`: a view of P (or zeros) when u is x's
// unpacked() in those tiles, else a slice of x.
NodeRef tile_of(const NodeRef& x, const std::vector<int64_t>& tile, const std::vector<int64_t>& tiles,
                const Unpacked* u = nullptr);

// The gradient of x = unpack(P) from the gradient gp of P: the projection of the dense
// gradient onto tensors with pk's properties (the mean over each group's permutations, zero
// outside the nonzero tiles), declared with them.
NodeRef spread(const NodeRef& gp, const Packing& pk);

// How many tiles a stored (sorted) tile tuple stands for: its distinct permutations.
int64_t multiplicity(const std::vector<int64_t>& sorted_tuple);
// Those multiplicities (times sign) for each of G's stored tiles, as a 1-D constant of dtype t.
NodeRef tile_weights(const PackedGroup& G, double sign, DType t);

// A bool tensor of P's shape, true where P holds one of the tensor's elements along the dense
// dims `along` (false on the zero padding of edge tiles); nullptr when nothing is padded there.
NodeRef stored_mask(const Packing& pk, const std::vector<bool>& along);

// Maps of unpacked tensors (packed_ops.cpp): r, a map just built whose tensor operands are all
// unpack(P) of one layout (the others constants), and that keeps their properties, becomes
// unpack(f(P...)) (padding put back to 0 when f(0) != 0); a block-sparse one whose f(0) is not
// 0 is f of each stored tile and f(0) elsewhere; x * y of a block-sparse x and a dense y is
// unpack(P * pack(y)). Else r itself.
NodeRef packed_map(NodeRef r);  // by value: nearly every map returns r itself, moved
// Sums, maxima and minima of an unpack(P) over `dims` (0-based, any nonempty set) from P
// (packed_reduce.cpp), with keepdim false; nullptr where the dense values must be read.
NodeRef packed_reduce(Op op, const NodeRef& x, std::vector<int> dims);
// The dense tensor of a block-sparse packing whose zero tiles are fill(zeros) (pk.tiles set).
NodeRef unpack_filled(const NodeRef& p, const Packing& pk,
                      const std::function<NodeRef(const NodeRef&)>& fill);

// What a named tensor keeps of x: when x is declared (not a constant) and packs, its P under a
// marker (a Declare whose attrs say which dense tensor it packs); else x itself.
NodeRef stored_form(const NodeRef& x);
// What reading a name gives back from what it keeps (n: the marker while pending, or the stored
// leaf, with `kept` the properties the environment kept of it): unpack(P) with the declaration,
// or n declared with `kept` (trusted: they were true of the value).
NodeRef read_form(const NodeRef& n, PropertiesAttrs kept);
// The bytes x's storage holds: its P's when x is (or would be stored as) packed, else the
// independent elements' (stored_elements).
int64_t held_bytes(const NodeRef& x);

}  // namespace tapestry::build
