// Reductions of packed tensors (packed.hpp): sum, max and min over any dims, computed from the
// stored tiles P (docs/properties.md, "Exploited"). What is reduced decides how:
// - block-sparse: each stored tile reduced, then the tiles that meet in one result tile
//   combined; a result tile whose slab has zero tiles adds 0 (and meets 0 for max and min);
// - a symmetry group untouched by the reduction stays packed (its tiles reduced in the other
//   dims), so the result is unpacked with it;
// - a group reduced whole: its stored tiles weighted by how many tiles each stands for (a sum),
//   or read once (max, min; an antisymmetric group takes max |P|, since its values come in
//   pairs +-v); an antisymmetric sum is 0 * (the sum of P), so NaN and inf still show;
// - some dims of a group reduced and some kept (partial_group): each stored tile reduced along
//   the slots each of its arrangements puts in the reduced dims, mirrored (permuted, negated or
//   conjugated) into the kept tile that arrangement belongs to; sums cut any number of groups,
//   max and min one (an antisymmetric group's mirrored tiles take -min, resp. -max).
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

// A dim of a tensor being reduced from P: group m's packed dim (q) or dense dim `id`.
struct Dim {
  bool q;
  int id;
  bool operator==(const Dim& o) const { return q == o.q && id == o.id; }
};

int position(const std::vector<Dim>& L, Dim d) {
  const auto it = std::find(L.begin(), L.end(), d);
  internal_check(it != L.end());
  return static_cast<int>(it - L.begin());
}

Op opposite(Op op) { return op == Op::Max ? Op::Min : Op::Max; }

// Group m of a reduction, some of its dims reduced and some kept, from `hi` (and, for max/min of an
// antisymmetric group, `lo`: the same with the opposite op, since max(-v) = -min v), whose dims
// are L: each dense tile T of the group (every distinct arrangement of each stored tuple, as
// the unpack makes it) is its stored tile reduced along the slots T puts in the reduced dims
// and permuted, negated or conjugated as the unpack would; the tiles meeting in one kept tile
// are combined. So each stored tile is read once per distinct set of slots it is reduced
// along (two for a pair: its row and column sums) and never unpacked. Returns the result with
// L updated (the group's Q dim and reduced dims gone, its kept dims whole).
NodeRef partial_group(Op op, const NodeRef& hi, const NodeRef& lo, std::vector<Dim>& L, const PackedGroup& G,
                      int m, const std::vector<int>& dims, bool signed_values) {
  const size_t k = G.dims.size();
  std::vector<size_t> kept_slots;
  std::vector<Dim> target;  // L without Q and the reduced dims
  for (const Dim& d : L) {
    if (d.q ? d.id == m : in(dims, d.id) && in(G.dims, d.id)) continue;
    target.push_back(d);
  }
  for (size_t s = 0; s < k; ++s)
    if (!in(dims, G.dims[s])) kept_slots.push_back(s);
  const int qpos = position(L, {true, m});
  std::map<std::pair<unsigned, bool>, NodeRef> reduced;  // by the stored slots reduced, and lo
  auto reduce_slots = [&](unsigned mask, bool low) {
    NodeRef& r = reduced[{mask, low}];
    if (!r) {
      std::vector<int> along;
      for (size_t t = 0; t < k; ++t)
        if (mask >> t & 1u) along.push_back(position(L, {false, G.dims[t]}));
      std::sort(along.begin(), along.end());
      r = reduce(low ? opposite(op) : op, low ? lo : hi, along, false);
    }
    return r;
  };
  std::map<std::vector<int64_t>, std::vector<NodeRef>> parts;  // by the kept slots' tile indices
  Shape tile_shape;
  for (size_t q = 0; q < G.stored.size(); ++q) {
    std::vector<int64_t> T = G.stored[q];
    do {  // each distinct arrangement T of the stored tuple S (sorted): a dense tile
      std::vector<size_t> ord(k), sigma(k);  // slot s of T holds slot sigma(s) of S
      std::iota(ord.begin(), ord.end(), 0);
      std::stable_sort(ord.begin(), ord.end(), [&](size_t a, size_t b) { return T[a] < T[b]; });
      for (size_t t = 0; t < k; ++t) sigma[ord[t]] = t;
      int inversions = 0;
      unsigned mask = 0;
      for (size_t s = 0; s < k; ++s) {
        for (size_t r = s + 1; r < k; ++r) inversions += sigma[s] > sigma[r];
        if (in(dims, G.dims[s])) mask |= 1u << sigma[s];
      }
      const bool odd = inversions % 2 == 1, negate = G.anti && odd && signed_values;
      NodeRef c = select(reduce_slots(mask, op != Op::Sum && negate), qpos, static_cast<int64_t>(q));
      // c's dims: L without Q and the stored slots reduced; stored slot sigma(s) is T's slot s.
      std::vector<Dim> have;
      for (const Dim& d : L) {
        if (d.q && d.id == m) continue;
        const auto it = std::find(G.dims.begin(), G.dims.end(), d.id);
        if (!d.q && it != G.dims.end()) {
          const size_t t = static_cast<size_t>(it - G.dims.begin());
          if (mask >> t & 1u) continue;
          const size_t s = static_cast<size_t>(std::find(sigma.begin(), sigma.end(), t) - sigma.begin());
          have.push_back({false, G.dims[s]});
        } else {
          have.push_back(d);
        }
      }
      std::vector<int> perm;
      for (const Dim& d : target) perm.push_back(position(have, d));
      if (!std::is_sorted(perm.begin(), perm.end())) c = permute(c, perm);
      if (negate) c = binary(Op::Sub, Operand::integer_number(0), c);
      if (G.herm && odd) c = mirror_conj(c);
      std::vector<int64_t> key;
      for (size_t s : kept_slots) key.push_back(T[s]);
      parts[key].push_back(c);
      tile_shape = c->shape;
    } while (std::next_permutation(T.begin(), T.end()));
  }
  int64_t per_tile = 1;  // dense tiles meeting in one kept tile
  for (size_t s = 0; s < k - kept_slots.size(); ++s) per_tile *= G.g;
  const DType t = hi->dtype;
  std::function<NodeRef(size_t, std::vector<int64_t>&)> build = [&](size_t i,
                                                                    std::vector<int64_t>& key) -> NodeRef {
    if (i == kept_slots.size()) {
      const auto it = parts.find(key);
      NodeRef v;
      if (it == parts.end()) {  // every tile of it is an antisymmetric diagonal's zero tile
        v = full(tile_shape, 0, t);
      } else {
        v = combine(op, it->second);
        if (op != Op::Sum && static_cast<int64_t>(it->second.size()) < per_tile)
          v = binary(elementwise(op), v, Operand::number(0));
      }
      for (size_t j = 0; j < kept_slots.size(); ++j) {
        const int64_t len = std::min(G.b, G.n - key[j] * G.b);
        if (len < G.b) v = narrow(v, position(target, {false, G.dims[kept_slots[j]]}), 0, len);
      }
      return v;
    }
    std::vector<NodeRef> tiles;
    for (int64_t x = 0; x < G.g; ++x) {
      key.push_back(x);
      tiles.push_back(build(i + 1, key));
      key.pop_back();
    }
    return tiles.size() == 1 ? tiles[0] : cat(tiles, position(target, {false, G.dims[kept_slots[i]]}));
  };
  std::vector<int64_t> key;
  NodeRef r = build(0, key);
  L = std::move(target);
  return r;
}

NodeRef groups_reduce(Op op, const NodeRef& x, const Unpacked& u, const std::vector<int>& dims) {
  const Packing& pk = u.pk;
  const int ng = static_cast<int>(pk.groups.size()), r = static_cast<int>(pk.shape.size());
  std::vector<const PackedGroup*> whole, kept;
  std::vector<int> partial;  // group indices
  bool whole_anti = false;
  for (int m = 0; m < ng; ++m) {
    const PackedGroup& G = pk.groups[m];
    const auto n = std::count_if(G.dims.begin(), G.dims.end(), [&](int d) { return in(dims, d); });
    if (n == 0) kept.push_back(&G);
    else if (n == static_cast<int64_t>(G.dims.size())) whole.push_back(&G), whole_anti = whole_anti || G.anti;
    else partial.push_back(m);
  }
  if (op != Op::Sum) {
    // max / min: the kept groups must stay what they were (symmetric), or an antisymmetric one
    // would turn symmetric (max |P|) or into nothing (max P): read dense then. One group at a
    // time is cut (a second's mirrored tiles would need max and min of the first's).
    if (partial.size() > 1) return nullptr;
    for (const PackedGroup* G : kept)
      if (G->anti || G->herm) return nullptr;
  }
  auto is_whole = [&](int m) { return std::find(whole.begin(), whole.end(), &pk.groups[m]) != whole.end(); };
  auto in_partial = [&](int d) {
    for (int m : partial)
      if (in(pk.groups[m].dims, d)) return true;
    return false;
  };
  // First the whole groups and the dims outside the cut groups. P's dims: one packed dim per
  // group, then x's dims (group dims shrunk to b).
  std::vector<int> pdims;
  for (int m = 0; m < ng; ++m)
    if (is_whole(m)) pdims.push_back(m);
  for (int d : dims)
    if (!in_partial(d)) pdims.push_back(ng + d);
  std::sort(pdims.begin(), pdims.end());
  auto first = [&](Op o) -> NodeRef {
    NodeRef p = u.p;
    if (o == Op::Sum) {
      bool herm = false, zero_sum = false;
      for (int m = 0; m < ng; ++m) {
        const PackedGroup& G = pk.groups[m];
        if (!is_whole(m)) continue;
        zero_sum = zero_sum || G.anti;
        herm = herm || G.herm;
        if (G.anti) continue;
        Shape ws(p->shape.size(), 1);
        ws[m] = static_cast<int64_t>(G.stored.size());
        p = binary(Op::Mul, p, reshape(tile_weights(G, 1, real_dtype(x->dtype)), ws));
      }
      NodeRef s = pdims.empty() ? p : reduce(Op::Sum, p, pdims, false);
      if (zero_sum) s = binary(Op::Mul, s, Operand::number(0));  // 0, with NaN and inf kept
      if (herm) s = cast(unary(Op::Real, s), x->dtype);          // a Hermitian pair's sum is real
      return s;
    }
    if (whole_anti) {  // values come in pairs +-v (and 0): max is max |P|, min -max |P|
      const NodeRef m = reduce(Op::Max, unary(Op::Abs, p), pdims, false);
      return o == Op::Max ? m : unary(Op::Neg, m);
    }
    std::vector<bool> along(r, false);
    for (const PackedGroup* G : whole)
      for (int d : G->dims) along[d] = true;
    for (int m : partial)
      for (int d : pk.groups[m].dims) along[d] = true;
    p = without_padding(o, p, pk, along);
    return pdims.empty() ? p : reduce(o, p, pdims, false);
  };
  NodeRef p = first(op);
  if (!partial.empty()) {
    std::vector<Dim> L;
    for (int m = 0; m < ng; ++m)
      if (!is_whole(m)) L.push_back({true, m});
    for (int d = 0; d < r; ++d)
      if (!in(dims, d) || in_partial(d)) L.push_back({false, d});
    // A whole antisymmetric group's max |P| is the same for a mirrored tile: no sign to follow.
    const bool signed_values = op == Op::Sum || !whole_anti;
    for (int m : partial) {
      const bool lo = op != Op::Sum && signed_values && pk.groups[m].anti;
      p = partial_group(op, p, lo ? first(opposite(op)) : nullptr, L, pk.groups[m], m, dims, signed_values);
    }
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
