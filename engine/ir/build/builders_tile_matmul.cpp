// A matmul whose left operand is declared block-sparse (x:declare{tiles, nonzero}) visits only
// its nonzero tiles: row block I of the product is the sum over the nonzero tiles (I, K) of
// A[I, K] @ B[K, :], a row block with none is zeros. The planner then sees (and costs) only
// those products; the result is declared sparse in the row blocks that had none.
#include <algorithm>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/dtype.hpp"
#include "engine/ir/properties.hpp"

namespace tapestry::build {

NodeRef tile_matmul(const NodeRef& a, const NodeRef& b) {
  if (a->shape.size() != 2 || b->shape.size() != 2 || a->shape[1] != b->shape[0]) return nullptr;
  const Properties p = properties_of(a);
  if (p.tiles.empty() || p.zero) return nullptr;
  bool any_zero = false;
  for (const bool nz : p.nonzero) any_zero = any_zero || !nz;
  if (!any_zero) return nullptr;
  const Shape grid = tile_grid(a->shape, p.tiles);
  const int64_t m = b->shape[1];
  const DType t = promote(a->dtype, b->dtype);
  std::vector<NodeRef> rows;
  PropertiesAttrs out{{}, {p.tiles[0], m}, {}};
  for (int64_t i = 0; i < grid[0]; ++i) {
    const int64_t r0 = i * p.tiles[0], h = std::min(p.tiles[0], a->shape[0] - r0);
    NodeRef sum;
    for (int64_t k = 0; k < grid[1]; ++k) {
      if (!p.nonzero[static_cast<size_t>(i * grid[1] + k)]) continue;
      const int64_t c0 = k * p.tiles[1], w = std::min(p.tiles[1], a->shape[1] - c0);
      const NodeRef term = matmul(narrow(narrow(a, 0, r0, h), 1, c0, w), narrow(b, 0, c0, w));
      sum = sum ? binary(Op::Add, sum, term) : term;
    }
    out.nonzero.push_back(sum != nullptr);
    rows.push_back(sum ? sum : full({h, m}, 0, t));
  }
  return declare(rows.size() == 1 ? rows[0] : cat(rows, 0), std::move(out), true);
}

}  // namespace tapestry::build
