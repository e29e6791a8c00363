// Packed storage as graph (packed.hpp): pack and unpack are views, cats and zeros.
#include "engine/ir/build/packed.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <unordered_map>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/dtype.hpp"
#include "engine/ir/op.hpp"
#include "engine/ir/properties.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry::build {
namespace {

// At most this many tiles per dim in an unpack, by group size k: the unpack has g^k leaves.
int64_t max_tiles(int64_t k) {
  switch (k) {
    case 2: return 16;
    case 3: return 8;
    case 4: return 4;
    case 5: return 3;
    default: return 2;
  }
}

double choose(int64_t n, int64_t k) {
  double r = 1;
  for (int64_t i = 1; i <= k; ++i) r = r * static_cast<double>(n - k + i) / static_cast<double>(i);
  return r;
}

// Sorted tuples of k tile indices below g (strictly increasing when `strict`), in order.
void sorted_tuples(int64_t g, size_t k, bool strict, std::vector<int64_t>& cur,
                   std::vector<std::vector<int64_t>>& out) {
  if (cur.size() == k) {
    out.push_back(cur);
    return;
  }
  for (int64_t t = cur.empty() ? 0 : cur.back() + (strict ? 1 : 0); t < g; ++t) {
    cur.push_back(t);
    sorted_tuples(g, k, strict, cur, out);
    cur.pop_back();
  }
}

// An antisymmetric group in tiles of 1 element is zero wherever two indices are equal: only
// the strictly increasing tuples are stored.
bool strict(bool anti, int64_t b) { return anti && b == 1; }

bool has_repeat(const std::vector<int64_t>& T) {
  for (size_t i = 0; i < T.size(); ++i)
    for (size_t j = i + 1; j < T.size(); ++j)
      if (T[i] == T[j]) return true;
  return false;
}

bool is_zero_full(const NodeRef& n) {
  if (n->op != Op::Full) return false;
  const FullAttrs a = attrs_of<FullAttrs>(*n);
  return is_inexact(a.dtype) ? a.real == 0 : a.integer == 0;
}

// cat along dim, with neighbouring zero generators merged into one (a row of zero tiles is
// one generator, never a cat of them).
NodeRef cat_merging_zeros(const std::vector<NodeRef>& parts, int dim) {
  std::vector<NodeRef> out;
  for (const NodeRef& p : parts) {
    if (!out.empty() && is_zero_full(out.back()) && is_zero_full(p)) {
      Shape s = p->shape;
      s[dim] += out.back()->shape[dim];
      out.back() = full(s, 0, p->dtype);
    } else {
      out.push_back(p);
    }
  }
  return out.size() == 1 ? out[0] : cat(out, dim);
}

// x clipped to `len` along dim when a tile overhangs the edge.
NodeRef clip(const NodeRef& x, int dim, int64_t len) {
  return len < x->shape[dim] ? narrow(x, dim, 0, len) : x;
}

// x padded with zeros to `len` along dim (an edge tile to the full tile).
NodeRef pad_to(const NodeRef& x, int dim, int64_t len) {
  if (x->shape[dim] == len) return x;
  std::vector<int64_t> before(x->shape.size(), 0), after(x->shape.size(), 0);
  after[dim] = len - x->shape[dim];
  return pad(x, before, after, PadMode::Constant, 0.0);
}

Shape grid_of(const Packing& pk) { return tile_grid(pk.shape, pk.tiles); }

NodeRef tile_slice(const NodeRef& x, const std::vector<int64_t>& tile, const std::vector<int64_t>& tiles) {
  NodeRef v = x;
  for (size_t d = 0; d < tiles.size(); ++d) {
    const int64_t first = tile[d] * tiles[d];
    v = narrow(v, static_cast<int>(d), first, std::min(tiles[d], x->shape[d] - first));
  }
  return v;
}

std::vector<int64_t> unflatten(int64_t flat, const Shape& grid) {
  std::vector<int64_t> idx(grid.size());
  for (int d = static_cast<int>(grid.size()) - 1; d >= 0; --d) {
    idx[d] = flat % grid[d];
    flat /= grid[d];
  }
  return idx;
}

// One unsorted tile of group m of the tensor cur (groups 0..m still packed in dims 0..m).
NodeRef group_leaf(const NodeRef& cur, int m, const PackedGroup& G, const std::vector<int64_t>& T) {
  const size_t k = G.dims.size();
  if (strict(G.anti, G.b) && has_repeat(T)) {  // zero: a tile of the diagonal, not stored
    Shape s = cur->shape;
    s.erase(s.begin() + m);
    for (int d : G.dims) s[m + d] = 1;
    return full(s, 0, cur->dtype);
  }
  std::vector<size_t> ord(k);
  std::iota(ord.begin(), ord.end(), 0);
  std::stable_sort(ord.begin(), ord.end(), [&](size_t a, size_t b) { return T[a] < T[b]; });
  std::vector<int64_t> S(k);
  std::vector<size_t> sigma(k);  // slot s of the tile T holds slot sigma(s) of the stored tile S
  for (size_t t = 0; t < k; ++t) {
    S[t] = T[ord[t]];
    sigma[ord[t]] = t;
  }
  NodeRef v = select(cur, m, G.index_of(S));
  std::vector<int> perm(v->shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  int inversions = 0;
  for (size_t s = 0; s < k; ++s) {
    perm[m + G.dims[s]] = m + G.dims[sigma[s]];
    for (size_t r = s + 1; r < k; ++r) inversions += sigma[s] > sigma[r];
  }
  v = permute(v, perm);
  // 0 - v, not -v: an element that is 0 stays +0, as x - x^T makes it (1 / x then agrees).
  if (G.anti && inversions % 2 == 1) v = binary(Op::Sub, Operand::integer_number(0), v);
  if (G.herm && inversions % 2 == 1) v = mirror_conj(v);
  for (size_t s = 0; s < k; ++s) v = clip(v, m + G.dims[s], G.n - T[s] * G.b);
  return v;
}

// The mean of x over every permutation of g's dims (signed when antisymmetric): x itself
// when x has the symmetry, and what makes a gradient through the stored tiles the projection
// of the dense one onto tensors with the symmetry (docs/properties.md, "Gradients").
NodeRef group_average(const NodeRef& x, int offset, const PackedGroup& G) {
  const size_t k = G.dims.size();
  if (k > 4 || !is_inexact(x->dtype)) return x;
  std::vector<size_t> sigma(k);
  std::iota(sigma.begin(), sigma.end(), 0);
  NodeRef sum;
  int count = 0;
  do {
    std::vector<int> perm(x->shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    int inversions = 0;
    for (size_t s = 0; s < k; ++s) {
      perm[offset + G.dims[s]] = offset + G.dims[sigma[s]];
      for (size_t r = s + 1; r < k; ++r) inversions += sigma[s] > sigma[r];
    }
    NodeRef term = permute(x, perm);
    if (G.herm && inversions % 2 == 1) term = unary(Op::Conj, term);
    const bool negative = G.anti && inversions % 2 == 1;
    sum = !sum ? term : binary(negative ? Op::Sub : Op::Add, sum, term);
    ++count;
  } while (std::next_permutation(sigma.begin(), sigma.end()));
  return binary(Op::Mul, sum, Operand::number(1.0 / count));
}

// unpacked() answers from here for the unpacks this process built (nodes are immutable, so
// an answer stays true while its node lives); it bounds the walk-and-rebuild check to nodes
// that came from elsewhere (a plan cache, a rebuilt expression).
struct Known {
  std::weak_ptr<const Node> node;
  Unpacked u;
};
std::unordered_map<const Node*, Known>& known_unpacks() {
  static thread_local std::unordered_map<const Node*, Known> m;
  return m;
}

const Unpacked* known_unpack(const NodeRef& x) {
  auto& m = known_unpacks();
  const auto it = m.find(x.get());
  if (it == m.end()) return nullptr;
  if (it->second.node.lock() != x) {
    m.erase(it);
    return nullptr;
  }
  return &it->second.u;
}

void remember_unpack(const NodeRef& x, const Packing& pk, const NodeRef& p) {
  auto& m = known_unpacks();
  if (m.size() >= 4096)
    for (auto it = m.begin(); it != m.end();) it = it->second.node.expired() ? m.erase(it) : std::next(it);
  if (m.size() >= 4096) m.clear();
  m[x.get()] = Known{x, Unpacked{pk, p}};
}

NodeRef assemble_group(const NodeRef& cur, int m, const PackedGroup& G, std::vector<int64_t>& T) {
  const size_t s = T.size();
  if (s == G.dims.size()) return group_leaf(cur, m, G, T);
  std::vector<NodeRef> parts;
  for (int64_t t = 0; t < G.g; ++t) {
    T.push_back(t);
    parts.push_back(assemble_group(cur, m, G, T));
    T.pop_back();
  }
  return cat(parts, m + G.dims[s]);
}

using Fill = std::function<NodeRef(const NodeRef&)>;

// r (cats of views and zero generators) with each zero generator replaced by fill(it).
NodeRef fill_zeros(const NodeRef& r, const Fill& fill) {
  if (is_zero_full(r)) return fill(r);
  if (r->op != Op::Cat) return r;
  std::vector<NodeRef> parts;
  for (const NodeRef& in : r->inputs) parts.push_back(fill_zeros(in, fill));
  return cat(parts, attrs_of<CatAttrs>(*r).dim);
}

NodeRef assemble_tiles(const NodeRef& p, const Packing& pk, const Shape& grid, std::vector<int64_t>& T,
                       const std::vector<int64_t>& where, const Fill* fill = nullptr) {
  const size_t d = T.size();
  if (d == grid.size()) {
    int64_t flat = 0;
    for (size_t e = 0; e < grid.size(); ++e) flat = flat * grid[e] + T[e];
    Shape s(grid.size());
    for (size_t e = 0; e < grid.size(); ++e) s[e] = std::min(pk.tiles[e], pk.shape[e] - T[e] * pk.tiles[e]);
    if (where[flat] < 0) return full(s, 0, p->dtype);
    NodeRef v = select(p, 0, where[flat]);
    for (size_t e = 0; e < grid.size(); ++e) v = clip(v, static_cast<int>(e), s[e]);
    return v;
  }
  std::vector<NodeRef> parts;
  for (int64_t t = 0; t < grid[d]; ++t) {
    T.push_back(t);
    parts.push_back(assemble_tiles(p, pk, grid, T, where, fill));
    T.pop_back();
  }
  NodeRef r = cat_merging_zeros(parts, static_cast<int>(d));
  if (fill && d == 0) r = fill_zeros(r, *fill);
  return r;
}

}  // namespace

int64_t PackedGroup::index_of(std::vector<int64_t> sorted_tuple) const {
  const auto it = std::lower_bound(stored.begin(), stored.end(), sorted_tuple);
  internal_check(it != stored.end() && *it == sorted_tuple);
  return it - stored.begin();
}

Shape Packing::packed_shape() const {
  Shape s;
  if (!tiles.empty()) {
    s.push_back(static_cast<int64_t>(nonzero.size()));
    s.insert(s.end(), tiles.begin(), tiles.end());
    return s;
  }
  for (const PackedGroup& G : groups) s.push_back(static_cast<int64_t>(G.stored.size()));
  Shape rest = shape;
  for (const PackedGroup& G : groups)
    for (int d : G.dims) rest[d] = G.b;
  s.insert(s.end(), rest.begin(), rest.end());
  return s;
}

bool Packing::padded() const {
  for (size_t d = 0; d < tiles.size(); ++d)
    if (shape[d] % tiles[d] != 0) return true;
  for (const PackedGroup& G : groups)
    if (G.n % G.b != 0) return true;
  return false;
}

PropertiesAttrs Packing::declared() const {
  PropertiesAttrs p;
  for (const PackedGroup& G : groups) p.groups.push_back({G.anti, G.dims, G.herm});
  p.groups.insert(p.groups.end(), also.begin(), also.end());
  p.tiles = tiles;
  if (!tiles.empty()) p.nonzero = mask;
  return p;
}

int64_t group_tile(int64_t n, int64_t k, bool anti) {
  if (n <= 1) return 1;  // (an empty dim: tiles of 1, none of them; 0 divided every caller by 0)
  const int64_t b0 = (n + max_tiles(k) - 1) / max_tiles(k);
  int64_t best = n;
  double best_cost = std::pow(static_cast<double>(n), static_cast<double>(k));  // one tile: nothing saved
  for (int64_t b = std::min(n, 4 * b0); b >= b0; --b) {
    const int64_t g = (n + b - 1) / b;
    const double tuples = strict(anti, b) ? choose(g, k) : choose(g + k - 1, k);
    const double cost = tuples * std::pow(static_cast<double>(b), static_cast<double>(k));
    if (cost < best_cost) {
      best_cost = cost;
      best = b;
    }
  }
  return best;
}

PackedGroup packed_group(const SymmetryGroup& g, int64_t n) {
  PackedGroup G;
  G.dims = g.dims;
  G.anti = g.anti;
  G.herm = g.herm;
  G.n = n;
  G.b = group_tile(n, static_cast<int64_t>(g.dims.size()), g.anti);
  G.g = (n + G.b - 1) / G.b;
  std::vector<int64_t> cur;
  sorted_tuples(G.g, g.dims.size(), strict(G.anti, G.b), cur, G.stored);
  return G;
}

std::optional<Packing> packing_of(const Shape& shape, const PropertiesAttrs& p) {
  Packing pk;
  pk.shape = shape;
  if (!p.tiles.empty()) {
    const bool any_zero = std::find(p.nonzero.begin(), p.nonzero.end(), false) != p.nonzero.end();
    const bool any_nonzero = std::find(p.nonzero.begin(), p.nonzero.end(), true) != p.nonzero.end();
    if (any_zero && any_nonzero) {
      pk.tiles = p.tiles;
      pk.mask = p.nonzero;
      pk.also = p.groups;
      for (size_t t = 0; t < p.nonzero.size(); ++t)
        if (p.nonzero[t]) pk.nonzero.push_back(static_cast<int64_t>(t));
      return pk;
    }
  }
  for (const SymmetryGroup& g : p.groups) {
    PackedGroup G = packed_group(g, shape[g.dims[0]]);
    if (G.g > 1) pk.groups.push_back(std::move(G));
  }
  if (pk.groups.empty()) return std::nullopt;
  std::sort(pk.groups.begin(), pk.groups.end(),
            [](const PackedGroup& a, const PackedGroup& b) { return a.dims[0] < b.dims[0]; });
  return pk;
}

NodeRef pack(const NodeRef& x, const Packing& pk) {
  internal_check(x->shape == pk.shape);
  if (NodeRef p = packed_source(x, pk)) return p;
  if (!pk.tiles.empty()) {
    const Shape grid = grid_of(pk);
    std::vector<NodeRef> views;
    for (const int64_t t : pk.nonzero) {
      NodeRef v = tile_slice(x, unflatten(t, grid), pk.tiles);
      for (size_t d = 0; d < pk.tiles.size(); ++d) v = pad_to(v, static_cast<int>(d), pk.tiles[d]);
      views.push_back(v);
    }
    return stack(views, 0);
  }
  NodeRef cur = x;
  for (size_t m = 0; m < pk.groups.size(); ++m) {
    const PackedGroup& G = pk.groups[m];
    cur = group_average(cur, static_cast<int>(m), G);
    std::vector<NodeRef> views;
    for (const std::vector<int64_t>& T : G.stored) {
      NodeRef v = cur;
      for (size_t s = 0; s < T.size(); ++s) {
        const int dim = static_cast<int>(m) + G.dims[s];
        v = pad_to(narrow(v, dim, T[s] * G.b, std::min(G.b, G.n - T[s] * G.b)), dim, G.b);
      }
      views.push_back(v);
    }
    cur = stack(views, static_cast<int>(m));
  }
  return cur;
}

NodeRef unpack(const NodeRef& p, const Packing& pk) {
  internal_check(p->shape == pk.packed_shape());
  NodeRef cur = p;
  if (!pk.tiles.empty()) {
    const Shape grid = grid_of(pk);
    std::vector<int64_t> where(pk.mask.size(), -1);
    for (size_t i = 0; i < pk.nonzero.size(); ++i) where[pk.nonzero[i]] = static_cast<int64_t>(i);
    std::vector<int64_t> T;
    cur = assemble_tiles(p, pk, grid, T, where);
  } else {
    for (int m = static_cast<int>(pk.groups.size()) - 1; m >= 0; --m) {
      std::vector<int64_t> T;
      cur = assemble_group(cur, m, pk.groups[m], T);
    }
  }
  NodeRef y = declare(cur, pk.declared(), true);
  remember_unpack(y, pk, p);
  return y;
}

NodeRef packed_source(const NodeRef& x, const Packing& pk) {
  if (x->op != Op::Declare || x->shape != pk.shape) return nullptr;
  if (const Unpacked* u = known_unpack(x)) return u->pk == pk ? u->p : nullptr;
  const Shape want = pk.packed_shape();
  NodeRef n = x->inputs[0];
  for (int step = 0; step < 512 && n; ++step) {
    if (n->shape == want && unpack(n, pk) == x) return n;
    if (n->inputs.empty()) return nullptr;
    NodeRef next = n->inputs[0];
    if (n->op == Op::Cat)
      for (const NodeRef& in : n->inputs)
        if (!is_zero_full(in)) {
          next = in;
          break;
        }
    n = next;
  }
  return nullptr;
}

std::optional<Unpacked> unpacked(const NodeRef& x) {
  if (x->op != Op::Declare) return std::nullopt;
  if (const Unpacked* u = known_unpack(x)) return *u;
  const PropertiesAttrs a = attrs_of<PropertiesAttrs>(*x);
  std::optional<Packing> pk = packing_of(x->shape, a);
  if (!pk || pk->declared() != a) return std::nullopt;
  NodeRef p = packed_source(x, *pk);
  if (!p) return std::nullopt;
  return Unpacked{std::move(*pk), std::move(p)};
}

NodeRef tile_of(const NodeRef& x, const std::vector<int64_t>& tile, const std::vector<int64_t>& tiles,
                const Unpacked* u) {
  if (!u || u->pk.tiles != tiles) return tile_slice(x, tile, tiles);
  const Shape grid = grid_of(u->pk);
  int64_t flat = 0;
  for (size_t d = 0; d < grid.size(); ++d) flat = flat * grid[d] + tile[d];
  Shape s(grid.size());
  for (size_t d = 0; d < grid.size(); ++d) s[d] = std::min(tiles[d], x->shape[d] - tile[d] * tiles[d]);
  if (!u->pk.mask[flat]) return full(s, 0, x->dtype);
  const auto it = std::lower_bound(u->pk.nonzero.begin(), u->pk.nonzero.end(), flat);
  NodeRef v = select(u->p, 0, it - u->pk.nonzero.begin());
  for (size_t d = 0; d < grid.size(); ++d) v = clip(v, static_cast<int>(d), s[d]);
  return v;
}

namespace {

std::optional<Packing> packing_of_marker(const PropertiesAttrs& a) {
  PropertiesAttrs d = a;
  d.packed.clear();
  return packing_of(a.packed, d);
}

}  // namespace

NodeRef stored_form(const NodeRef& x) {
  const Properties p = properties_of(x);
  if (!p.packed_of.packed.empty() || p.uniform || p.zero || p.diagonal) return x;
  const std::optional<Packing> pk = packing_of(x->shape, p.declared());
  if (!pk) return x;
  NodeRef packed = pack(x, *pk);
  // A block-sparse P is kept split along its tiles, never within them: contractions batch
  // over the tile dim and give each rank whole tiles (packed_contract.cpp), so a P left in
  // quarter rows by the plan that computed it (a checked declaration is gathered to one rank
  // and packed by rows) would be moved again by every later contraction.
  if (!pk->tiles.empty()) {
    std::vector<int64_t> parts(packed->shape.size(), 1);
    parts[0] = kPartsPerRank;
    packed = constrain(packed, std::move(parts));
  }
  PropertiesAttrs a = pk->declared();
  a.packed = x->shape;
  return make_node(Op::Declare, {packed}, a.encode(), packed->shape, packed->dtype);
}

NodeRef read_form(const NodeRef& n, PropertiesAttrs kept) {
  if (n->op == Op::Declare) {
    const PropertiesAttrs a = attrs_of<PropertiesAttrs>(*n);
    if (!a.packed.empty()) return unpack(n->inputs[0], *packing_of_marker(a));
  }
  if (!kept.packed.empty()) {
    const std::optional<Packing> pk = packing_of_marker(kept);
    internal_check(pk && n->shape == pk->packed_shape());
    return unpack(n, *pk);
  }
  return kept.empty() ? n : declare(n, std::move(kept), true);
}

int64_t held_bytes(const NodeRef& x) {
  const int64_t size = static_cast<int64_t>(dtype_size(x->dtype));
  if (const std::optional<Unpacked> u = unpacked(x)) return numel(u->p->shape) * size;
  const Properties p = properties_of(x);
  if (!p.uniform && !p.zero && !p.diagonal)
    if (const std::optional<Packing> pk = packing_of(x->shape, p.declared()))
      return numel(pk->packed_shape()) * size;
  return stored_elements(x) * size;
}

NodeRef spread(const NodeRef& gp, const Packing& pk) {
  internal_check(gp->shape == pk.packed_shape());
  if (!pk.tiles.empty()) return unpack(gp, pk);
  const int groups = static_cast<int>(pk.groups.size());
  NodeRef y = gp;
  for (int m = 0; m < groups; ++m) {
    const PackedGroup& G = pk.groups[m];
    const size_t k = G.dims.size();
    if (k > 4) continue;
    double factorial = 1;
    for (size_t i = 2; i <= k; ++i) factorial *= static_cast<double>(i);
    std::vector<size_t> sigma(k);
    std::iota(sigma.begin(), sigma.end(), 0);
    NodeRef sum;
    do {
      // c[q]: 1/k! where sigma only permutes slots of equal tile index in q's tuple, else 0.
      std::vector<NodeRef> runs;
      double value = -1;
      int64_t len = 0;
      for (const std::vector<int64_t>& T : G.stored) {
        bool fixes = true;
        for (size_t s = 0; s < k; ++s) fixes = fixes && T[s] == T[sigma[s]];
        const double c = fixes ? 1.0 / factorial : 0.0;
        if (len > 0 && c != value) {
          runs.push_back(full({len}, value, gp->dtype));
          len = 0;
        }
        value = c;
        ++len;
      }
      runs.push_back(full({len}, value, gp->dtype));
      if (runs.size() == 1 && value == 0) continue;
      Shape ws(y->shape.size(), 1);
      ws[m] = static_cast<int64_t>(G.stored.size());
      const NodeRef c = reshape(runs.size() == 1 ? runs[0] : cat(runs, 0), ws);
      std::vector<int> perm(y->shape.size());
      std::iota(perm.begin(), perm.end(), 0);
      int inversions = 0;
      for (size_t s = 0; s < k; ++s) {
        perm[groups + G.dims[s]] = groups + G.dims[sigma[s]];
        for (size_t r = s + 1; r < k; ++r) inversions += sigma[s] > sigma[r];
      }
      NodeRef term = binary(Op::Mul, permute(y, perm), c);
      if (G.herm && inversions % 2 == 1) term = unary(Op::Conj, term);
      sum = !sum ? term : binary(G.anti && inversions % 2 == 1 ? Op::Sub : Op::Add, sum, term);
    } while (std::next_permutation(sigma.begin(), sigma.end()));
    y = sum;
  }
  return unpack(y, pk);
}

int64_t multiplicity(const std::vector<int64_t>& tuple) {
  int64_t r = 1, run = 1;
  for (size_t i = 1; i <= tuple.size(); ++i) {
    r *= static_cast<int64_t>(i);
    if (i < tuple.size() && tuple[i] == tuple[i - 1]) {
      ++run;
    } else {
      for (int64_t j = 2; j <= run; ++j) r /= j;
      run = 1;
    }
  }
  return r;
}

NodeRef tile_weights(const PackedGroup& G, double sign, DType t) {
  std::vector<NodeRef> runs;
  double value = 0;
  int64_t len = 0;
  for (const std::vector<int64_t>& T : G.stored) {
    const double w = sign * static_cast<double>(multiplicity(T));
    if (len > 0 && w != value) {
      runs.push_back(full({len}, value, t));
      len = 0;
    }
    value = w;
    ++len;
  }
  runs.push_back(full({len}, value, t));
  return runs.size() == 1 ? runs[0] : cat(runs, 0);
}

namespace {

// A constant i64 vector, as runs of arithmetic progressions (a few nodes for the tile tuples'
// indices, which rise in runs).
NodeRef index_vector(const std::vector<int64_t>& v) {
  std::vector<NodeRef> runs;
  for (size_t i = 0; i < v.size();) {
    size_t j = i + 1;
    const int64_t step = j < v.size() ? v[j] - v[i] : 1;
    while (j < v.size() && v[j] - v[j - 1] == step) ++j;
    const auto len = static_cast<int64_t>(j - i);
    runs.push_back(step == 0 || len == 1 ? full_int({len}, v[i], DType::I64)
                                         : arange_int(v[i], v[j - 1], step, DType::I64));
    i = j;
  }
  return runs.size() == 1 ? runs[0] : cat(runs, 0);
}

// (start[q] + position along P's dim `dim`) < n, broadcast over P's dims: dim 0 is q.
NodeRef inside(const std::vector<int64_t>& start, int qdim, int dim, int64_t len, int64_t n, size_t rank) {
  Shape sq(rank, 1), sp(rank, 1);
  sq[qdim] = static_cast<int64_t>(start.size());
  sp[dim] = len;
  const NodeRef s = reshape(index_vector(start), sq);
  const NodeRef pos = reshape(arange_int(0, len - 1, 1, DType::I64), sp);
  return binary(Op::Lt, binary(Op::Add, s, pos), Operand::integer_number(n));
}

}  // namespace

NodeRef stored_mask(const Packing& pk, const std::vector<bool>& along) {
  const size_t rank = pk.packed_shape().size();
  NodeRef m;
  auto add = [&](const NodeRef& c) { m = m ? binary(Op::LogicalAnd, m, c) : c; };
  if (!pk.tiles.empty()) {
    const Shape grid = grid_of(pk);
    for (size_t d = 0; d < pk.tiles.size(); ++d) {
      if (!along[d] || pk.shape[d] % pk.tiles[d] == 0) continue;
      std::vector<int64_t> start;
      for (const int64_t t : pk.nonzero) start.push_back(unflatten(t, grid)[d] * pk.tiles[d]);
      add(inside(start, 0, static_cast<int>(d) + 1, pk.tiles[d], pk.shape[d], rank));
    }
  }
  const int ng = static_cast<int>(pk.groups.size());
  for (int g = 0; g < ng; ++g) {
    const PackedGroup& G = pk.groups[g];
    if (G.n % G.b == 0) continue;
    for (size_t s = 0; s < G.dims.size(); ++s) {
      if (!along[G.dims[s]]) continue;
      std::vector<int64_t> start;
      for (const std::vector<int64_t>& T : G.stored) start.push_back(T[s] * G.b);
      add(inside(start, g, ng + G.dims[s], G.b, G.n, rank));
    }
  }
  return m;
}

NodeRef unpack_filled(const NodeRef& p, const Packing& pk, const Fill& fill) {
  internal_check(!pk.tiles.empty() && p->shape == pk.packed_shape());
  const Shape grid = grid_of(pk);
  std::vector<int64_t> where(pk.mask.size(), -1);
  for (size_t i = 0; i < pk.nonzero.size(); ++i) where[pk.nonzero[i]] = static_cast<int64_t>(i);
  std::vector<int64_t> T;
  return assemble_tiles(p, pk, grid, T, where, &fill);
}

}  // namespace tapestry::build
