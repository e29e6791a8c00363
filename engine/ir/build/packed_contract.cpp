// Contractions over declared properties (packed_contract.hpp): nonzero tile pairs, and
// (anti)symmetric groups through one einsum of the packed operands.
#include "engine/ir/build/packed_contract.hpp"

#include <algorithm>
#include <map>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/einsum.hpp"
#include "engine/ir/build/packed.hpp"
#include "engine/ir/dtype.hpp"
#include "engine/ir/properties.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry::build {
namespace {

bool has(const std::string& s, char c) { return s.find(c) != std::string::npos; }

// The tile extents of x when packing it would store only some of its tiles.
std::vector<int64_t> sparse_tiles(const NodeRef& x, const Properties& p) {
  if (p.tiles.empty()) return {};
  const std::optional<Packing> pk = packing_of(x->shape, p.declared());
  return pk && !pk->tiles.empty() ? p.tiles : std::vector<int64_t>{};
}

// Every tile index of a grid, row-major. (GCC 12 reports the push_back's reallocation as
// freeing a pointer past its block, -Wfree-nonheap-object: a false positive of that version.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
std::vector<std::vector<int64_t>> all_tiles(const Shape& grid) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> idx(grid.size(), 0);
  for (int64_t t = 0, n = numel(grid); t < n; ++t) {
    out.push_back(idx);
    for (int d = static_cast<int>(grid.size()) - 1; d >= 0 && ++idx[d] == grid[d]; --d) idx[d] = 0;
  }
  return out;
}
#pragma GCC diagnostic pop

// A contraction's operand cut in tiles: the extents per dim and the tiles that may be nonzero.
struct Tiled {
  std::vector<int64_t> ext;
  std::vector<std::vector<int64_t>> present;
};

Tiled tiled(const NodeRef& x, const std::string& labels, const std::map<char, int64_t>& ext,
            const Properties& p, bool sparse) {
  Tiled t;
  for (char c : labels) t.ext.push_back(ext.at(c));
  const Shape grid = tile_grid(x->shape, t.ext);
  const std::vector<std::vector<int64_t>> every = all_tiles(grid);
  for (size_t i = 0; i < every.size(); ++i)
    if (!sparse || p.nonzero[i]) t.present.push_back(every[i]);
  return t;
}

// The tiles `idx` of x in tiles of `ext`, stacked along a new dim 0, edge tiles padded with
// zeros (which add nothing to a contraction; the products are clipped). A block-sparse x
// kept as P gives P's rows: all of them in order is P itself. A dense x gives rows of its
// tiled view (padded, {g1, t1, g2, t2, ...} permuted to {g1*g2*..., t1, t2, ...}): affine
// views whose tile dim the planner splits like any other, so a rank given some tile pairs
// reads just those tiles.
NodeRef tile_stack(const NodeRef& x, const std::vector<std::vector<int64_t>>& idx,
                   const std::vector<int64_t>& ext, const Unpacked* u) {
  const Shape grid = tile_grid(x->shape, ext);
  std::vector<int64_t> rows;  // the flat tile index of each, then its row of the stack's source
  for (const std::vector<int64_t>& i : idx) {
    if (i.empty()) {  // a zero tile
      rows.push_back(-1);
      continue;
    }
    int64_t flat = 0;
    for (size_t d = 0; d < grid.size(); ++d) flat = flat * grid[d] + i[d];
    rows.push_back(flat);
  }
  NodeRef src;
  int64_t count = numel(grid);
  if (u && u->pk.tiles == ext && u->p->shape.size() == x->shape.size() + 1) {
    src = u->p;
    count = static_cast<int64_t>(u->pk.nonzero.size());
    for (int64_t& r : rows)
      if (r >= 0) r = std::lower_bound(u->pk.nonzero.begin(), u->pk.nonzero.end(), r) - u->pk.nonzero.begin();
  } else {
    const int k = static_cast<int>(grid.size());
    std::vector<int64_t> before(k, 0), after(k, 0);
    Shape split, flat{numel(grid)};
    std::vector<int> perm;
    for (int d = 0; d < k; ++d) {
      after[d] = grid[d] * ext[d] - x->shape[d];
      split.push_back(grid[d]);
      split.push_back(ext[d]);
      perm.push_back(2 * d);
      flat.push_back(ext[d]);
    }
    for (int d = 0; d < k; ++d) perm.push_back(2 * d + 1);
    NodeRef v = x;
    if (std::any_of(after.begin(), after.end(), [](int64_t e) { return e > 0; }))
      v = pad(v, before, after, PadMode::Constant, 0.0);
    src = reshape(permute(reshape(v, split), perm), flat);
  }
  bool identity = static_cast<int64_t>(rows.size()) == count;
  for (size_t t = 0; t < rows.size() && identity; ++t) identity = rows[t] == static_cast<int64_t>(t);
  if (identity) return src;
  std::vector<NodeRef> parts;
  const NodeRef zero = full(Shape(ext.begin(), ext.end()), 0, x->dtype);
  for (int64_t r : rows) parts.push_back(r < 0 ? zero : select(src, 0, r));
  return stack(parts, 0);
}

// The dense tensor of `shape` whose tiles of `ext` (row-major, edge tiles padded) are the
// rows of p: tile_stack's tiled view undone.
NodeRef untile(const NodeRef& p, const Shape& shape, const std::vector<int64_t>& ext) {
  const Shape grid = tile_grid(shape, ext);
  const int k = static_cast<int>(grid.size());
  Shape split(grid.begin(), grid.end()), padded;
  split.insert(split.end(), ext.begin(), ext.end());
  std::vector<int> perm;
  for (int d = 0; d < k; ++d) {
    perm.push_back(d);
    perm.push_back(k + d);
    padded.push_back(grid[d] * ext[d]);
  }
  NodeRef r = reshape(permute(reshape(p, split), perm), padded);
  for (int d = 0; d < k; ++d)
    if (padded[d] > shape[d]) r = narrow(r, d, 0, shape[d]);
  return r;
}

// Block-sparse operands: the products of nonzero tile pairs that agree on shared letters.
NodeRef tile_contract(const NodeRef& a, const std::string& la, const NodeRef& b, const std::string& lb,
                      const std::string& out, const Properties& pa, const Properties& pb) {
  const std::vector<int64_t> ta = sparse_tiles(a, pa), tb = sparse_tiles(b, pb);
  std::map<char, int64_t> ext;
  for (size_t d = 0; d < la.size(); ++d) ext[la[d]] = ta.empty() ? a->shape[d] : ta[d];
  for (size_t d = 0; d < lb.size(); ++d) {
    const int64_t e = tb.empty() ? b->shape[d] : tb[d];
    auto it = ext.find(lb[d]);
    if (it == ext.end() || ta.empty()) ext[lb[d]] = e;
    else if (!tb.empty() && it->second != e) return nullptr;  // tiles that do not line up: dense
  }
  const Tiled A = tiled(a, la, ext, pa, !ta.empty()), B = tiled(b, lb, ext, pb, !tb.empty());
  const std::optional<Unpacked> ua = unpacked(a), ub = unpacked(b);
  std::string shared;
  for (char c : la)
    if (has(lb, c)) shared += c;
  std::multimap<std::vector<int64_t>, size_t> by_key;  // B's tiles by their shared letters' indices
  for (size_t j = 0; j < B.present.size(); ++j) {
    std::vector<int64_t> key;
    for (char c : shared) key.push_back(B.present[j][lb.find(c)]);
    by_key.emplace(key, j);
  }
  // The nonzero tile pairs, as ONE einsum batched over them (a fresh letter z): the planner
  // sees a tile dim it can split, and a rank given z/4 multiplies whole tiles (those it
  // stores, when an operand is kept packed).
  struct Pair {
    std::vector<int64_t> ia, ib, io;
  };
  std::vector<Pair> pairs;
  for (const std::vector<int64_t>& ia : A.present) {
    std::vector<int64_t> key;
    for (char c : shared) key.push_back(ia[la.find(c)]);
    const auto [lo, hi] = by_key.equal_range(key);
    for (auto it = lo; it != hi; ++it) {
      const std::vector<int64_t>& ib = B.present[it->second];
      std::vector<int64_t> io;
      for (char c : out) io.push_back(has(la, c) ? ia[la.find(c)] : ib[lb.find(c)]);
      pairs.push_back({ia, ib, io});
    }
  }
  char z = 0;
  for (char c = 'a'; c <= 'z' && !z; ++c)
    if (!has(la, c) && !has(lb, c)) z = c;
  for (char c = 'A'; c <= 'Z' && !z; ++c)
    if (!has(la, c) && !has(lb, c)) z = c;
  if (!z) return nullptr;
  Shape shape;
  std::vector<int64_t> oext;
  for (char c : out) {
    shape.push_back(has(la, c) ? a->shape[la.find(c)] : b->shape[lb.find(c)]);
    oext.push_back(ext.at(c));
  }
  const Shape grid = tile_grid(shape, oext);
  if (pairs.empty()) return full(shape, 0, promote(a->dtype, b->dtype));
  // The products in the order of their output tiles: with one pair per output tile (a
  // block-diagonal or SUMMA-like pattern) the batched product is the result's P as it lies.
  auto flat_of = [&](const std::vector<int64_t>& io) {
    int64_t f = 0;
    for (size_t d = 0; d < grid.size(); ++d) f = f * grid[d] + io[d];
    return f;
  };
  std::stable_sort(pairs.begin(), pairs.end(),
                   [&](const Pair& p, const Pair& q) { return flat_of(p.io) < flat_of(q.io); });
  // The output tiles with a pair, in order, and the run of pairs each sums.
  struct Run {
    int64_t flat;
    size_t first, count;
  };
  std::vector<Run> runs;
  for (size_t k = 0; k < pairs.size(); ++k) {
    const int64_t f = flat_of(pairs[k].io);
    if (runs.empty() || runs.back().flat != f) runs.push_back({f, k, 0});
    ++runs.back().count;
  }
  PropertiesAttrs decl;
  decl.tiles = oext;
  decl.nonzero.assign(static_cast<size_t>(numel(grid)), false);
  for (const Run& r : runs) decl.nonzero[r.flat] = true;
  char w = 0;  // a second fresh letter: the pair slot within an output tile, summed
  for (char c = 'a'; c <= 'z' && !w; ++c)
    if (c != z && !has(la, c) && !has(lb, c)) w = c;
  for (char c = 'A'; c <= 'Z' && !w; ++c)
    if (c != z && !has(la, c) && !has(lb, c)) w = c;
  size_t most = 0;  // the longest run
  for (const Run& r : runs) most = std::max(most, r.count);
  if (!w && most > 1) return nullptr;
  const std::string zs(1, z), ws(1, w);
  // The product of the runs `sel` (all of one count m): one einsum batched over their output
  // tiles whose sum runs over the pair slot w as well as the shared letters, so the m products
  // of an output tile accumulate inside one gemm (K = m tiles) and the product is those output
  // tiles' P. A run shorter than m (padded) takes zero tiles in its last slots.
  auto product = [&](const std::vector<size_t>& sel, size_t m) {
    std::vector<std::vector<int64_t>> tiles_a, tiles_b;
    for (size_t r : sel)
      for (size_t slot = 0; slot < m; ++slot) {
        const bool real = slot < runs[r].count;
        tiles_a.push_back(real ? pairs[runs[r].first + slot].ia : std::vector<int64_t>{});
        tiles_b.push_back(real ? pairs[runs[r].first + slot].ib : std::vector<int64_t>{});
      }
    NodeRef sa = tile_stack(a, tiles_a, A.ext, ua ? &*ua : nullptr),
            sb = tile_stack(b, tiles_b, B.ext, ub ? &*ub : nullptr);
    if (m == 1) return einsum(zs + la + "," + zs + lb + "->" + zs + out, {sa, sb});
    auto slots = [&](const NodeRef& x) {
      Shape sh{static_cast<int64_t>(sel.size()), static_cast<int64_t>(m)};
      sh.insert(sh.end(), x->shape.begin() + 1, x->shape.end());
      return reshape(x, sh);
    };
    return einsum(zs + ws + la + "," + zs + ws + lb + "->" + zs + out, {slots(sa), slots(sb)});
  };
  std::vector<size_t> every(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) every[r] = r;
  NodeRef prod;
  if (runs.size() * most * 4 <= pairs.size() * 5) {
    // Padding every output tile to the longest run costs at most 1/4 more tile products: one
    // einsum (block-diagonal and SUMMA-like patterns have one pair per tile, no padding).
    prod = product(every, most);
  } else {
    // Else one einsum per run length (no padding), their output tiles put back in order.
    std::map<size_t, std::vector<size_t>> by_count;
    for (size_t r = 0; r < runs.size(); ++r) by_count[runs[r].count].push_back(r);
    std::vector<NodeRef> rows(runs.size());
    for (const auto& [m, sel] : by_count) {
      const NodeRef p = product(sel, m);
      for (size_t k = 0; k < sel.size(); ++k) rows[sel[k]] = select(p, 0, static_cast<int64_t>(k));
    }
    prod = stack(rows, 0);
  }
  if (static_cast<int64_t>(runs.size()) < numel(grid)) return unpack(prod, *packing_of(shape, decl));
  return untile(prod, shape, oext);
}

std::string letters_of(const std::string& labels, const std::vector<int>& dims) {
  std::string s;
  for (int d : dims) s += labels[d];
  return s;
}

bool same_set(std::string x, std::string y) {
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

// A group of one operand that this contraction can exploit, and its packed dim's letter.
struct Use {
  SymmetryGroup g;
  int partner = -1;  // summed: the index of the other operand's group with the same letters
  char q = 0;
};

NodeRef group_contract(const NodeRef& a, const std::string& la, const NodeRef& b, const std::string& lb,
                       const std::string& out, const Properties& pa, const Properties& pb) {
  std::string fresh;
  for (char c = 'a'; c <= 'z'; ++c) fresh += c;
  for (char c = 'A'; c <= 'Z'; ++c) fresh += c;
  fresh.erase(std::remove_if(fresh.begin(), fresh.end(), [&](char c) { return has(la, c) || has(lb, c); }),
              fresh.end());
  auto worth = [](const SymmetryGroup& g, int64_t n) { return packed_group(g, n).g > 1; };
  std::vector<Use> ua, ub;
  size_t next = 0;
  for (const SymmetryGroup& g : pa.groups) {
    const std::string L = letters_of(la, g.dims);
    if (!worth(g, a->shape[g.dims[0]])) continue;
    const bool free = std::none_of(L.begin(), L.end(), [&](char c) { return has(lb, c); });
    const bool summed = std::all_of(L.begin(), L.end(), [&](char c) { return has(lb, c) && !has(out, c); });
    if (free && std::all_of(L.begin(), L.end(), [&](char c) { return has(out, c); })) {
      if (next < fresh.size()) ua.push_back({g, -1, fresh[next++]});
    } else if (summed) {
      for (size_t j = 0; j < pb.groups.size(); ++j)
        if (pb.groups[j].anti == g.anti && same_set(letters_of(lb, pb.groups[j].dims), L) &&
            next < fresh.size())
          ua.push_back({g, static_cast<int>(j), fresh[next++]});
    }
  }
  for (size_t j = 0; j < pb.groups.size(); ++j) {
    const SymmetryGroup& g = pb.groups[j];
    const std::string L = letters_of(lb, g.dims);
    if (!worth(g, b->shape[g.dims[0]])) continue;
    const auto partner =
        std::find_if(ua.begin(), ua.end(), [&](const Use& u) { return u.partner == static_cast<int>(j); });
    if (partner != ua.end()) {
      ub.push_back({g, static_cast<int>(partner - ua.begin()), partner->q});
    } else if (std::none_of(L.begin(), L.end(), [&](char c) { return has(la, c) || !has(out, c); }) &&
               next < fresh.size()) {
      ub.push_back({g, -1, fresh[next++]});
    }
  }
  if (ua.empty() && ub.empty()) return nullptr;
  const DType t = promote(a->dtype, b->dtype);
  // The packings: groups in order of their first dim, as Packing keeps them.
  auto packing = [](const NodeRef& x, std::vector<Use>& uses) {
    std::sort(uses.begin(), uses.end(), [](const Use& u, const Use& v) { return u.g.dims[0] < v.g.dims[0]; });
    Packing pk;
    pk.shape = x->shape;
    for (const Use& u : uses) pk.groups.push_back(packed_group(u.g, x->shape[u.g.dims[0]]));
    return pk;
  };
  // (ub's partner indices point into ua, which the sort reorders: they are matched by letter.)
  const Packing pka = packing(a, ua), pkb = packing(b, ub);
  std::string sa, sb;  // the packed operands' letters
  for (const Use& u : ua) sa += u.q;
  sa += la;
  std::string lb2 = lb;
  NodeRef bp = pkb.groups.empty() ? b : pack(b, pkb);
  for (size_t m = 0; m < ub.size(); ++m) {
    sb += ub[m].q;
    const auto pa_it = std::find_if(ua.begin(), ua.end(), [&](const Use& u) { return u.q == ub[m].q; });
    if (pa_it == ua.end()) continue;
    // B's slot s gets A's slot-s letter: B is (anti)symmetric in the group, so the tile of B
    // with A's letters in A's slot order is B's stored tile times the permutation's sign.
    const std::string LA = letters_of(la, pa_it->g.dims), LB = letters_of(lb, ub[m].g.dims);
    int inversions = 0;
    std::vector<size_t> pos(LB.size());
    for (size_t s = 0; s < LB.size(); ++s) pos[s] = LA.find(LB[s]);
    for (size_t s = 0; s < pos.size(); ++s)
      for (size_t r = s + 1; r < pos.size(); ++r) inversions += pos[s] > pos[r];
    for (size_t s = 0; s < LB.size(); ++s) lb2[ub[m].g.dims[s]] = LA[s];
    const double sg = ub[m].g.anti && inversions % 2 == 1 ? -1.0 : 1.0;
    Shape ws(bp->shape.size(), 1);
    ws[m] = static_cast<int64_t>(pkb.groups[m].stored.size());
    bp = binary(Op::Mul, bp, reshape(tile_weights(pkb.groups[m], sg, t), ws));
  }
  sb += lb2;
  const NodeRef ap = pka.groups.empty() ? a : pack(a, pka);
  // The result: the output groups' packed dims (a's then b's, as they lie in `out`), then out.
  Packing pko;
  std::string so;
  Shape oshape;
  for (char c : out) oshape.push_back(has(la, c) ? a->shape[la.find(c)] : b->shape[lb.find(c)]);
  pko.shape = oshape;
  std::vector<std::pair<int, Use>> outs;  // by first output dim
  for (const std::vector<Use>* uses : {&ua, &ub})
    for (const Use& u : *uses) {
      if (u.partner >= 0) continue;  // summed
      const std::string& lx = uses == &ua ? la : lb;
      SymmetryGroup g{u.g.anti, {}};
      for (int d : u.g.dims) g.dims.push_back(static_cast<int>(out.find(lx[d])));
      if (!std::is_sorted(g.dims.begin(), g.dims.end())) return nullptr;  // letters reordered
      outs.emplace_back(g.dims[0], Use{g, -1, u.q});
    }
  std::sort(outs.begin(), outs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [first, u] : outs) {
    so += u.q;
    pko.groups.push_back(packed_group(u.g, oshape[u.g.dims[0]]));
  }
  so += out;
  const NodeRef r = einsum(sa + "," + sb + "->" + so, {ap, bp});
  if (pko.groups.empty()) return r;
  return unpack(r, pko);
}

// A Hermitian pair summed in both operands (the same two letters, in either order): the
// stored tiles' products D (diagonal tiles) and O (the others), and the result D + O + conj(O)
// = D + 2 Re(O), since a mirrored tile pair's product is the conjugate of the stored one's.
NodeRef herm_contract(const NodeRef& a, const std::string& la, const NodeRef& b, const std::string& lb,
                      const std::string& out, const Properties& pa, const Properties& pb) {
  for (const SymmetryGroup& ga : pa.groups) {
    if (!ga.herm) continue;
    const std::string L = letters_of(la, ga.dims);
    if (std::any_of(L.begin(), L.end(), [&](char c) { return has(out, c); })) continue;
    for (const SymmetryGroup& gb : pb.groups) {
      if (!gb.herm || !same_set(letters_of(lb, gb.dims), L)) continue;
      const PackedGroup G = packed_group(ga, a->shape[ga.dims[0]]);
      if (G.g <= 1) return nullptr;
      Packing pka, pkb;
      pka.shape = a->shape;
      pka.groups = {G};
      pkb.shape = b->shape;
      pkb.groups = {packed_group(gb, b->shape[gb.dims[0]])};
      const NodeRef ap = pack(a, pka);
      NodeRef bp = pack(b, pkb);
      std::string lb2 = lb;  // b's tile with a's letters in a's slot order: conjugated if swapped
      const std::string LB = letters_of(lb, gb.dims);
      if (LB != L) bp = unary(Op::Conj, bp);
      for (size_t s = 0; s < 2; ++s) lb2[gb.dims[s]] = L[s];
      std::string fresh;
      for (char c = 'a'; c <= 'z' && fresh.empty(); ++c)
        if (!has(la, c) && !has(lb, c)) fresh = c;
      for (char c = 'A'; c <= 'Z' && fresh.empty(); ++c)
        if (!has(la, c) && !has(lb, c)) fresh = c;
      if (fresh.empty()) return nullptr;
      std::vector<NodeRef> ad, ao, bd, bo;
      for (size_t q = 0; q < G.stored.size(); ++q) {
        const bool diag = G.stored[q][0] == G.stored[q][1];
        (diag ? ad : ao).push_back(select(ap, 0, static_cast<int64_t>(q)));
        (diag ? bd : bo).push_back(select(bp, 0, static_cast<int64_t>(q)));
      }
      const std::string spec = fresh + la + "," + fresh + lb2 + "->" + out;
      const NodeRef d = einsum(spec, {stack(ad, 0), stack(bd, 0)});
      const NodeRef o = einsum(spec, {stack(ao, 0), stack(bo, 0)});
      const NodeRef two_re = cast(binary(Op::Mul, unary(Op::Real, o), Operand::number(2)), o->dtype);
      return binary(Op::Add, d, two_re);
    }
  }
  return nullptr;
}

// The Hermitian groups dropped (group_contract exploits the others).
Properties without_herm(Properties p) {
  p.groups.erase(
      std::remove_if(p.groups.begin(), p.groups.end(), [](const SymmetryGroup& g) { return g.herm; }),
      p.groups.end());
  return p;
}

}  // namespace

NodeRef structured_contract(const NodeRef& a, const std::string& la, const NodeRef& b, const std::string& lb,
                            const std::string& out) {
  const Properties pa = properties_of(a), pb = properties_of(b);
  if (pa.empty() && pb.empty()) return nullptr;
  if (!sparse_tiles(a, pa).empty() || !sparse_tiles(b, pb).empty()) {
    if (NodeRef r = tile_contract(a, la, b, lb, out, pa, pb)) return r;
  }
  if (pa.groups.empty() && pb.groups.empty()) return nullptr;
  if (is_complex(a->dtype))
    if (NodeRef r = herm_contract(a, la, b, lb, out, pa, pb)) return r;
  const Properties qa = without_herm(pa), qb = without_herm(pb);
  if (qa.groups.empty() && qb.groups.empty()) return nullptr;
  return group_contract(a, la, b, lb, out, qa, qb);
}

}  // namespace tapestry::build
