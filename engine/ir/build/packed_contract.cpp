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

// Every tile index of a grid, row-major.
std::vector<std::vector<int64_t>> all_tiles(const Shape& grid) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> idx(grid.size(), 0);
  for (int64_t t = 0, n = numel(grid); t < n; ++t) {
    out.push_back(idx);
    for (int d = static_cast<int>(grid.size()) - 1; d >= 0 && ++idx[d] == grid[d]; --d) idx[d] = 0;
  }
  return out;
}

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

NodeRef assemble(const std::map<std::vector<int64_t>, NodeRef>& tiles, const Shape& grid, const Shape& shape,
                 const std::vector<int64_t>& ext, std::vector<int64_t>& idx, DType t) {
  const size_t d = idx.size();
  if (d == grid.size()) {
    const auto it = tiles.find(idx);
    if (it != tiles.end()) return it->second;
    Shape s(grid.size());
    for (size_t e = 0; e < grid.size(); ++e) s[e] = std::min(ext[e], shape[e] - idx[e] * ext[e]);
    return full(s, 0, t);
  }
  std::vector<NodeRef> parts;
  for (int64_t i = 0; i < grid[d]; ++i) {
    idx.push_back(i);
    parts.push_back(assemble(tiles, grid, shape, ext, idx, t));
    idx.pop_back();
  }
  return parts.size() == 1 ? parts[0] : cat(parts, static_cast<int>(d));
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
  const std::string spec = la + "," + lb + "->" + out;
  std::map<std::vector<int64_t>, NodeRef> sums;
  for (const std::vector<int64_t>& ia : A.present) {
    std::vector<int64_t> key;
    for (char c : shared) key.push_back(ia[la.find(c)]);
    const auto [lo, hi] = by_key.equal_range(key);
    for (auto it = lo; it != hi; ++it) {
      const std::vector<int64_t>& ib = B.present[it->second];
      std::vector<int64_t> io;
      for (char c : out) io.push_back(has(la, c) ? ia[la.find(c)] : ib[lb.find(c)]);
      const NodeRef term = einsum(
          spec, {tile_of(a, ia, A.ext, ua ? &*ua : nullptr), tile_of(b, ib, B.ext, ub ? &*ub : nullptr)});
      NodeRef& s = sums[io];
      s = s ? binary(Op::Add, s, term) : term;
    }
  }
  Shape shape;
  std::vector<int64_t> oext;
  for (char c : out) {
    shape.push_back(has(la, c) ? a->shape[la.find(c)] : b->shape[lb.find(c)]);
    oext.push_back(ext.at(c));
  }
  const Shape grid = tile_grid(shape, oext);
  const DType t = promote(a->dtype, b->dtype);
  std::vector<int64_t> idx;
  NodeRef r = assemble(sums, grid, shape, oext, idx, t);
  if (static_cast<int64_t>(sums.size()) == numel(grid) || sums.empty()) return r;
  PropertiesAttrs decl;
  decl.tiles = oext;
  for (const std::vector<int64_t>& i : all_tiles(grid)) decl.nonzero.push_back(sums.count(i) > 0);
  return declare(r, std::move(decl), true);
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
