// Reductions of packed tensors (packed.hpp): sum, max and min over any dims, computed from the
// stored tiles P (docs/properties.md, "Exploited"). What is reduced decides how:
// - block-sparse: each stored tile reduced, then the tiles that meet in one result tile
//   combined; a result tile whose slab has zero tiles adds 0 (and meets 0 for max and min);
// - a symmetry group untouched by the reduction stays packed (its tiles reduced in the other
//   dims), so the result is unpacked with it;
// - a group reduced whole: its stored tiles weighted by how many tiles each stands for (a sum),
//   or read once (max, min; an antisymmetric group takes max |P|, since its values come in
//   pairs +-v); an antisymmetric sum is 0 * (the sum of P), so NaN and inf still show;
// - one dim of a pair (the tensor's only group): each stored tile's sums along either slot,
//   scattered to the tiles of the dim that stays (the mirrored tile's sum is the stored one's
//   other slot, negated or conjugated).
// Edge tiles' padding is masked away where it would count (max and min).
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/packed.hpp"
#include "engine/ir/dtype.hpp"
#include "engine/ir/op.hpp"
#include "engine/ir/properties.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry::build {
namespace {

bool in(const std::vector<int>& v, int d) { return std::find(v.begin(), v.end(), d) != v.end(); }

Shape reduced_shape_of(const Shape& s, const std::vector<int>& dims) {
  Shape out;
  for (int d = 0; d < static_cast<int>(s.size()); ++d)
    if (!in(dims, d)) out.push_back(s[d]);
  return out;
}

std::vector<int64_t> unflatten(int64_t flat, const Shape& grid) {
  std::vector<int64_t> idx(grid.size());
  for (int d = static_cast<int>(grid.size()) - 1; d >= 0; --d) {
    idx[d] = flat % grid[d];
    flat /= grid[d];
  }
  return idx;
}

// x padded with zeros to the full tile extents `ext` (an edge tile).
NodeRef pad_full(const NodeRef& x, const Shape& ext) {
  std::vector<int64_t> before(ext.size(), 0), after(ext.size(), 0);
  bool any = false;
  for (size_t d = 0; d < ext.size(); ++d) {
    after[d] = ext[d] - x->shape[d];
    any = any || after[d] > 0;
  }
  return any ? pad(x, before, after, PadMode::Constant, 0.0) : x;
}

NodeRef clip_to(const NodeRef& x, const Shape& s) {
  NodeRef v = x;
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] < v->shape[d]) v = narrow(v, static_cast<int>(d), 0, s[d]);
  return v;
}

NodeRef combine(Op op, std::vector<NodeRef> terms) {
  if (terms.size() == 1) return terms[0];
  return reduce(op, stack(terms, 0), {0}, false);
}

Op elementwise(Op op) { return op == Op::Max ? Op::Maximum : Op::Minimum; }

// P with its padding along the dense dims `along` replaced by what max (or min) ignores.
NodeRef without_padding(Op op, const NodeRef& p, const Packing& pk, const std::vector<bool>& along) {
  const NodeRef m = stored_mask(pk, along);
  if (!m) return p;
  const double inf = std::numeric_limits<double>::infinity();
  return where(m, p, Operand::number(op == Op::Max ? -inf : inf));
}

NodeRef tiles_reduce(Op op, const NodeRef& x, const Unpacked& u, const std::vector<int>& dims) {
  const Packing& pk = u.pk;
  const int r = static_cast<int>(pk.shape.size());
  std::vector<bool> along(r, false);
  for (int d : dims) along[d] = true;
  const NodeRef p = op == Op::Sum ? u.p : without_padding(op, u.p, pk, along);
  std::vector<int> pdims;
  for (int d : dims) pdims.push_back(d + 1);
  const NodeRef pr = reduce(op, p, pdims, false);  // {nnz, tiles of the dims that stay}
  if (static_cast<int>(dims.size()) == r) {        // everything: some tile is zero (it packs)
    const NodeRef all = reduce(op, pr, {0}, false);
    return op == Op::Sum ? all : binary(elementwise(op), all, Operand::number(0));
  }
  const Shape grid = tile_grid(pk.shape, pk.tiles);
  Shape rshape, rgrid, rtiles;
  int64_t slab = 1;
  for (int d = 0; d < r; ++d) {
    if (along[d]) {
      slab *= grid[d];
    } else {
      rshape.push_back(pk.shape[d]);
      rgrid.push_back(grid[d]);
      rtiles.push_back(pk.tiles[d]);
    }
  }
  std::map<int64_t, std::vector<NodeRef>> terms;  // by the result tile's flat index
  for (size_t q = 0; q < pk.nonzero.size(); ++q) {
    const std::vector<int64_t> t = unflatten(pk.nonzero[q], grid);
    int64_t flat = 0;
    for (int d = 0, k = 0; d < r; ++d)
      if (!along[d]) flat = flat * rgrid[k++] + t[d];
    terms[flat].push_back(select(pr, 0, static_cast<int64_t>(q)));
  }
  const int64_t ntiles = numel(rgrid);
  std::vector<NodeRef> tiles(static_cast<size_t>(ntiles));
  for (const auto& [flat, ts] : terms) {
    NodeRef t = combine(op, ts);
    if (op != Op::Sum && static_cast<int64_t>(ts.size()) < slab)  // zero tiles in the slab
      t = binary(elementwise(op), t, Operand::number(0));
    tiles[flat] = t;
  }
  if (static_cast<int64_t>(terms.size()) < ntiles) {  // block-sparse: P of the result's tiles
    Packing out;
    out.shape = rshape;
    out.tiles = rtiles;
    out.mask.assign(static_cast<size_t>(ntiles), false);
    std::vector<NodeRef> stored;
    for (const auto& [flat, ts] : terms) {
      out.mask[flat] = true;
      out.nonzero.push_back(flat);
      stored.push_back(tiles[flat]);
    }
    return unpack(stack(stored, 0), out);
  }
  // Every result tile holds a value: dense, the tiles clipped and put together.
  std::vector<NodeRef> row;
  std::function<NodeRef(size_t, int64_t)> build = [&](size_t d, int64_t flat) -> NodeRef {
    if (d == rgrid.size()) {
      const std::vector<int64_t> t = unflatten(flat, rgrid);
      Shape s(rgrid.size());
      for (size_t e = 0; e < s.size(); ++e) s[e] = std::min(rtiles[e], rshape[e] - t[e] * rtiles[e]);
      return clip_to(tiles[flat], s);
    }
    std::vector<NodeRef> parts;
    for (int64_t i = 0; i < rgrid[d]; ++i) parts.push_back(build(d + 1, flat * rgrid[d] + i));
    return parts.size() == 1 ? parts[0] : cat(parts, static_cast<int>(d));
  };
  return build(0, 0);
}

// One dim of the only pair summed (with any other dims): each stored tile's sum along the
// summed slot lands in the tile of its kept slot, and (off the diagonal) its mirror's, the sum
// along the kept slot, negated or conjugated, in the tile of its summed slot.
NodeRef pair_partial_sum(const NodeRef& x, const Unpacked& u, const std::vector<int>& dims) {
  const Packing& pk = u.pk;
  const PackedGroup& G = pk.groups[0];
  const int summed_slot = in(dims, G.dims[0]) ? 0 : 1, kept_slot = 1 - summed_slot;
  const int ps = 1 + G.dims[summed_slot], pkd = 1 + G.dims[kept_slot];  // their dims in P
  std::vector<int> others;                                              // the other summed dims, in P
  for (int d : dims)
    if (d != G.dims[summed_slot]) others.push_back(d + 1);
  std::vector<int> a = others, b = others;
  a.push_back(ps);
  b.push_back(pkd);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const NodeRef along_summed = reduce(Op::Sum, u.p, a, false), along_kept = reduce(Op::Sum, u.p, b, false);
  // Where the slot that is not summed lies in a tile of either (Q selected away): the kept
  // dim's place in the result for along_summed, the summed dim's place for along_kept.
  auto place = [&](int pdim, int other) {
    int pos = pdim - 1 - (other < pdim ? 1 : 0);
    for (int o : others) pos -= o < pdim ? 1 : 0;
    return pos;
  };
  const int rk = place(pkd, ps), rs = place(ps, pkd);
  std::vector<std::vector<NodeRef>> parts(static_cast<size_t>(G.g));
  for (size_t q = 0; q < G.stored.size(); ++q) {
    const std::vector<int64_t>& T = G.stored[q];
    parts[T[kept_slot]].push_back(select(along_summed, 0, static_cast<int64_t>(q)));
    if (T[0] == T[1]) continue;
    NodeRef m = select(along_kept, 0, static_cast<int64_t>(q));
    if (rs != rk) {  // the tile's dim moved to where the kept dim lies in the result
      std::vector<int> perm(m->shape.size());
      std::iota(perm.begin(), perm.end(), 0);
      perm.erase(perm.begin() + rs);
      perm.insert(perm.begin() + rk, rs);
      m = permute(m, perm);
    }
    if (G.anti) m = binary(Op::Sub, Operand::integer_number(0), m);
    if (G.herm) m = unary(Op::Conj, m);
    parts[T[summed_slot]].push_back(m);
  }
  std::vector<NodeRef> tiles;
  for (int64_t t = 0; t < G.g; ++t) {
    internal_check(!parts[t].empty());  // every tile index lies in some stored tuple
    const NodeRef v = combine(Op::Sum, parts[t]);
    const int64_t len = std::min(G.b, G.n - t * G.b);
    tiles.push_back(len < G.b ? narrow(v, rk, 0, len) : v);
  }
  return tiles.size() == 1 ? tiles[0] : cat(tiles, rk);
}

NodeRef groups_reduce(Op op, const NodeRef& x, const Unpacked& u, const std::vector<int>& dims) {
  const Packing& pk = u.pk;
  const int ng = static_cast<int>(pk.groups.size()), r = static_cast<int>(pk.shape.size());
  std::vector<const PackedGroup*> whole, kept;
  bool partial = false, whole_anti = false;
  for (const PackedGroup& G : pk.groups) {
    const auto n = std::count_if(G.dims.begin(), G.dims.end(), [&](int d) { return in(dims, d); });
    if (n == 0) kept.push_back(&G);
    else if (n == static_cast<int64_t>(G.dims.size())) whole.push_back(&G), whole_anti = whole_anti || G.anti;
    else partial = true;
  }
  if (partial) {
    if (op != Op::Sum || ng != 1 || pk.groups[0].dims.size() != 2) return nullptr;
    return pair_partial_sum(x, u, dims);
  }
  if (op != Op::Sum) {
    // max / min: the kept groups must stay what they were (symmetric), or an antisymmetric one
    // would turn symmetric (max |P|) or into nothing (max P): read dense then.
    for (const PackedGroup* G : kept)
      if (G->anti || G->herm) return nullptr;
  }
  // P's dims: one packed dim per group, then x's dims (group dims shrunk to b).
  NodeRef p = u.p;
  std::vector<int> pdims;
  for (int m = 0; m < ng; ++m)
    if (std::find(whole.begin(), whole.end(), &pk.groups[m]) != whole.end()) pdims.push_back(m);
  for (int d : dims) pdims.push_back(ng + d);
  std::sort(pdims.begin(), pdims.end());
  bool zero_sum = false;
  if (op == Op::Sum) {
    bool herm = false;
    for (int m = 0; m < ng; ++m) {
      const PackedGroup& G = pk.groups[m];
      if (std::find(whole.begin(), whole.end(), &G) == whole.end()) continue;
      zero_sum = zero_sum || G.anti;
      herm = herm || G.herm;
      if (G.anti) continue;
      Shape ws(p->shape.size(), 1);
      ws[m] = static_cast<int64_t>(G.stored.size());
      p = binary(Op::Mul, p, reshape(tile_weights(G, 1, real_dtype(x->dtype)), ws));
    }
    NodeRef s = reduce(Op::Sum, p, pdims, false);
    if (zero_sum) s = binary(Op::Mul, s, Operand::number(0));  // 0, with NaN and inf kept
    if (herm) s = cast(unary(Op::Real, s), x->dtype);          // a Hermitian pair's sum is real
    p = s;
  } else if (whole_anti) {  // values come in pairs +-v: max is max |P|, min -max |P|
    const NodeRef m = reduce(Op::Max, unary(Op::Abs, p), pdims, false);
    p = op == Op::Max ? m : unary(Op::Neg, m);
  } else {
    std::vector<bool> along(r, false);
    for (const PackedGroup* G : whole)
      for (int d : G->dims) along[d] = true;
    p = reduce(op, without_padding(op, p, pk, along), pdims, false);
  }
  if (kept.empty()) return p;
  // The kept groups, their dims renumbered without the summed ones.
  Packing out;
  for (int d = 0; d < r; ++d)
    if (!in(dims, d)) out.shape.push_back(pk.shape[d]);
  for (const PackedGroup* G : kept) {  // the same tiles, the dims renumbered
    PackedGroup g = *G;
    for (int& d : g.dims)
      d -= static_cast<int>(std::count_if(dims.begin(), dims.end(), [&](int e) { return e < d; }));
    out.groups.push_back(std::move(g));
  }
  return unpack(p, out);
}

}  // namespace

NodeRef packed_reduce(Op op, const NodeRef& x, std::vector<int> dims) {
  if (!is_inexact(x->dtype) || (op != Op::Sum && op != Op::Max && op != Op::Min) || dims.empty())
    return nullptr;
  const std::optional<Unpacked> u = unpacked(x);
  if (!u) return nullptr;
  std::sort(dims.begin(), dims.end());
  const NodeRef r = u->pk.tiles.empty() ? groups_reduce(op, x, *u, dims) : tiles_reduce(op, x, *u, dims);
  if (r) internal_check(r->shape == reduced_shape_of(x->shape, dims) && r->dtype == x->dtype);
  return r;
}

}  // namespace tapestry::build
