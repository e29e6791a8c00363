// Declared properties (engine/ir/properties.hpp): x:declare, x:dense, and the creators'
// symmetric random tensors.
#include <algorithm>
#include <cmath>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/empty.hpp"
#include "engine/ir/properties.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry::build {
namespace {

bool knows(const Properties& p, const SymmetryGroup& g) {
  if (p.zero) return true;  // 0 is symmetric and antisymmetric in every group
  return std::find(p.groups.begin(), p.groups.end(), g) != p.groups.end();
}

bool overlaps(const SymmetryGroup& a, const SymmetryGroup& b) {
  for (int d : a.dims)
    if (std::find(b.dims.begin(), b.dims.end(), d) != b.dims.end()) return true;
  return false;
}

// Index i along dim d of shape, as an i64 tensor of that shape.
NodeRef index_along(const Shape& shape, int d) {
  Shape one(shape.size(), 1);
  one[d] = shape[d];
  return expand(reshape(arange_int(0, shape[d] - 1, 1, DType::I64), one), shape);
}

}  // namespace

void check_groups(const Shape& shape, std::vector<SymmetryGroup>& groups, DType dtype) {
  const int r = static_cast<int>(shape.size());
  for (size_t k = 0; k < groups.size(); ++k) {
    SymmetryGroup& g = groups[k];
    std::sort(g.dims.begin(), g.dims.end());
    user_check(g.dims.size() >= 2, "a symmetry group needs at least 2 dims, got ", group_str(g));
    user_check(!g.herm || g.dims.size() == 2, group_str(g),
               ": a Hermitian group is a pair of dims (x[i,j] = conj(x[j,i]))");
    user_check(!g.herm || is_complex(dtype), group_str(g), " needs a complex tensor (c64, c128), got ",
               dtype_name(dtype), " ", shape_str(shape),
               "; a real tensor is Hermitian when it is symmetric: use tp.symmetric");
    for (size_t i = 0; i < g.dims.size(); ++i) {
      user_check(g.dims[i] >= 0 && g.dims[i] < r, group_str(g), ": dim ", g.dims[i] + 1,
                 " is out of range for a tensor of shape ", shape_str(shape));
      user_check(i == 0 || g.dims[i] != g.dims[i - 1], group_str(g), " names dim ", g.dims[i] + 1, " twice");
      user_check(shape[g.dims[i]] == shape[g.dims[0]], group_str(g), " needs dims of equal sizes, but shape ",
                 shape_str(shape), " has ", shape[g.dims[0]], " in dim ", g.dims[0] + 1, " and ",
                 shape[g.dims[i]], " in dim ", g.dims[i] + 1);
    }
    for (size_t j = 0; j < k; ++j)
      user_check(!overlaps(groups[j], g), "symmetry groups ", group_str(groups[j]), " and ", group_str(g),
                 " share a dim");
  }
}

void check_tiles(const Shape& shape, const std::vector<int64_t>& tiles, const std::vector<bool>& nonzero) {
  user_check(tiles.size() == shape.size(), "tiles ", shape_str(tiles),
             " must give one extent per dim of shape ", shape_str(shape));
  for (size_t d = 0; d < tiles.size(); ++d)
    user_check(tiles[d] >= 1, "tiles ", shape_str(tiles), ": extents must be positive");
  const Shape grid = tile_grid(shape, tiles);
  user_check(static_cast<int64_t>(nonzero.size()) == numel(grid), "nonzero must cover the tile grid ",
             shape_str(grid), " of shape ", shape_str(shape), " in tiles ", shape_str(tiles), ", got ",
             nonzero.size(), " tiles");
}

NodeRef declare(const NodeRef& x, PropertiesAttrs p, bool trust) {
  user_check(!p.empty(),
             "nothing to declare: give symmetry = tp.symmetric{...} (or a list of groups), "
             "or tiles and nonzero");
  std::vector<SymmetryGroup>& groups = p.groups;
  check_groups(x->shape, groups, x->dtype);
  if (!p.tiles.empty()) check_tiles(x->shape, p.tiles, p.nonzero);
  const Properties known = properties_of(x);
  PropertiesAttrs unknown;
  for (const SymmetryGroup& g : groups)
    if (!knows(known, g)) unknown.groups.push_back(g);
  const bool tiles_known = p.tiles.empty() || (known.tiles == p.tiles && known.nonzero == p.nonzero);
  if (!tiles_known) {
    unknown.tiles = p.tiles;
    unknown.nonzero = p.nonzero;
  }
  if (unknown.empty() && x->op == Op::Declare) return x;
  if (p.tiles.empty()) {  // what x was known to have stays
    p.tiles = known.tiles;
    p.nonzero = known.nonzero;
  }
  // Keep what x is known to have where the new groups leave its dims alone.
  std::vector<SymmetryGroup> all = groups;
  for (const SymmetryGroup& g : known.groups)
    if (std::none_of(groups.begin(), groups.end(), [&](const SymmetryGroup& n) { return overlaps(n, g); }))
      all.push_back(g);
  std::sort(all.begin(), all.end(),
            [](const SymmetryGroup& a, const SymmetryGroup& b) { return a.dims < b.dims; });
  NodeRef src = x->op == Op::Declare ? x->inputs[0] : x;
  if (!trust && !unknown.empty())
    src = op_node(Op::CheckDeclared, {src}, unknown.encode(), x->shape, x->dtype);
  p.groups = std::move(all);
  return op_node(Op::Declare, {src}, p.encode(), x->shape, x->dtype);
}

NodeRef dense(const NodeRef& x) {
  if (properties_of(x).empty()) return x;
  const NodeRef& src = x->op == Op::Declare ? x->inputs[0] : x;
  if (properties_of(src).empty()) return src;
  return op_node(Op::Declare, {src}, PropertiesAttrs{}.encode(), x->shape, x->dtype);
}

NodeRef mirror_conj(const NodeRef& x) {
  return make_complex(unary(Op::Real, x), binary(Op::Sub, Operand::integer_number(0), unary(Op::Imag, x)));
}

NodeRef mirror(const NodeRef& x, const SymmetryGroup& g) {
  user_check(g.dims.size() == 2,
             "random tensors with a symmetry group of more than 2 dims are not made yet (", group_str(g),
             "); declare one with x:declare{symmetry = ...} instead");
  const int a = g.dims[0], b = g.dims[1];
  const NodeRef i = index_along(x->shape, a), j = index_along(x->shape, b);
  const NodeRef xt = transpose(x, a, b);
  if (g.herm) {  // the upper triangle, conjugated below; the diagonal real
    const NodeRef diag = cast(unary(Op::Real, x), x->dtype);
    return where(binary(Op::Lt, i, j), x, where(binary(Op::Gt, i, j), mirror_conj(xt), diag));
  }
  if (!g.anti) return where(binary(Op::Le, i, j), x, xt);  // the upper triangle, mirrored
  const NodeRef zero = full(x->shape, 0, x->dtype);
  return where(binary(Op::Lt, i, j), x, where(binary(Op::Gt, i, j), unary(Op::Neg, xt), zero));
}

}  // namespace tapestry::build

namespace tapestry::build {

NodeRef complex_random(bool normal, const Shape& shape, uint64_t seed, DType dtype) {
  Shape two = shape;
  two.push_back(2);
  const DType re = real_dtype(dtype);
  NodeRef r = normal ? randn(two, seed, re) : rand(two, seed, re);
  if (normal) r = binary(Op::Mul, r, Operand::number(std::sqrt(0.5)));
  const int last = static_cast<int>(shape.size());
  return binary(Op::Complex, select(r, last, 0), select(r, last, 1));
}

}  // namespace tapestry::build
