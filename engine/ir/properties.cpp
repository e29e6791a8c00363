#include "engine/ir/properties.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "engine/ir/dtype.hpp"
#include "engine/ir/op.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry {
namespace {

// At most this many nodes are visited per question (a chain of maps, or x = x + x repeated,
// would otherwise make every matmul and binding walk, or double, the whole history).
constexpr int kVisitBudget = 64;

// One question's walk: what each visited node has (shared inputs are visited once), and the
// nodes it may still visit.
struct Walk {
  int budget = kVisitBudget;
  std::unordered_map<const Node*, Properties> seen;
};

Properties derive(const NodeRef& n, Walk& w);

// Functions f with f(-x) = -f(x): they keep antisymmetry; even ones turn it into symmetry.
bool odd_op(Op op) {
  switch (op) {
    case Op::Neg:
    case Op::Sin:
    case Op::Tanh:
    case Op::Sign:
    case Op::Round:  // (not reciprocal: 1/0 = inf on the diagonal, which is not -inf)
    case Op::Conj:
    case Op::Real:
    case Op::Imag: return true;
    default: return false;
  }
}
bool even_op(Op op) { return op == Op::Abs || op == Op::Square || op == Op::Cos; }

// A cast keeps antisymmetry where negation commutes with it: between inexact types (rounding
// and overflow are sign-symmetric), from an integer to an integer no wider (both sides wrap
// modulo the target's 2^bits), and to bool (bool(-x) = bool(x): made symmetric by the caller).
// Not from an integer to a wider type or a float: -x of a u8 is 256 - x, and -(-128) is -128
// in i8 (a stored antisymmetric u8 tensor read as f32 would mirror 7 as -7, not 249); not from
// a float to an integer either (saturation: 300 and -300 become 127 and -128 in i8).
bool cast_keeps_anti(DType from, DType to) {
  if (to == DType::Bool) return true;
  if (is_inexact(from)) return is_inexact(to);
  if (from == DType::Bool || is_inexact(to)) return false;
  return dtype_size(to) <= dtype_size(from);
}

// Functions with f(conj z) = conj f(z) that map reals to reals: they keep Hermitian groups
// (whose diagonal is real). Not log and sqrt: log(-1) = i pi puts an imaginary part on the
// diagonal.
bool conj_op(Op op) {
  switch (op) {
    case Op::Cast:
    case Op::Neg:
    case Op::Exp:
    case Op::Sin:
    case Op::Cos:
    case Op::Square:
    case Op::Reciprocal:
    case Op::Conj: return true;
    default: return false;
  }
}

// f(0) = 0: zeros stay zeros (tile sparsity, zero tensors).
bool keeps_zero(Op op) {
  switch (op) {
    case Op::Cast:
    case Op::Neg:
    case Op::Abs:
    case Op::Sqrt:
    case Op::Sin:
    case Op::Tanh:
    case Op::Relu:
    case Op::Gelu:
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Sign:
    case Op::Square:
    case Op::Conj:
    case Op::Real:
    case Op::Imag: return true;
    default: return false;
  }
}

// Tile sparsity of a op b (finite values): a sum's nonzero tiles are the union, a product's
// the intersection (or the sparse operand's).
void binary_tiles(Op op, const Properties& a, const Properties& b, Properties& out) {
  const bool sum = op == Op::Add || op == Op::Sub || op == Op::Maximum || op == Op::Minimum;
  if (op == Op::Mul && (a.tiles.empty() || b.tiles.empty())) {
    const Properties& s = a.tiles.empty() ? b : a;
    out.tiles = s.tiles;
    out.nonzero = s.nonzero;
    return;
  }
  if (op == Op::Div && !a.tiles.empty() && b.uniform) {
    out.tiles = a.tiles;
    out.nonzero = a.nonzero;
    return;
  }
  if (!(sum || op == Op::Mul) || a.tiles.empty() || a.tiles != b.tiles) return;
  out.tiles = a.tiles;
  out.nonzero.resize(a.nonzero.size());
  for (size_t t = 0; t < a.nonzero.size(); ++t)
    out.nonzero[t] = sum ? (a.nonzero[t] || b.nonzero[t]) : (a.nonzero[t] && b.nonzero[t]);
}

// The group of dims {a, b} if y is a permute that swaps exactly dims a and b.
bool swaps(const NodeRef& y, SymmetryGroup& g) {
  if (y->op != Op::Permute) return false;
  const std::vector<int> perm = attrs_of<PermuteAttrs>(*y).perm;
  std::vector<int> moved;
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int>(i)) moved.push_back(static_cast<int>(i));
  if (moved.size() != 2) return false;
  g = SymmetryGroup{false, moved};
  return true;
}

// The group of dims {a, b} if y is x with exactly dims a and b swapped.
bool swapped_of(const NodeRef& y, const NodeRef& x, SymmetryGroup& g) {
  return y->op == Op::Permute && y->inputs[0] == x && swaps(y, g);
}

// The group {a, b} if y is conj(x) with dims a and b swapped (conj before or after the swap).
bool conj_swapped_of(const NodeRef& y, const NodeRef& x, SymmetryGroup& g) {
  if (!is_complex(x->dtype)) return false;
  if (y->op == Op::Conj) return swapped_of(y->inputs[0], x, g);
  return y->op == Op::Permute && y->inputs[0]->op == Op::Conj && y->inputs[0]->inputs[0] == x && swaps(y, g);
}

bool same_dims(const SymmetryGroup& a, const SymmetryGroup& b) { return a.dims == b.dims; }
bool symmetric(const SymmetryGroup& g) { return !g.anti && !g.herm; }

// The groups both operands have (over the same dims), combined by op.
std::vector<SymmetryGroup> both(Op op, const Properties& a, const Properties& b) {
  std::vector<SymmetryGroup> out;
  for (const SymmetryGroup& ga : a.groups)
    for (const SymmetryGroup& gb : b.groups) {
      if (!same_dims(ga, gb)) continue;
      if (symmetric(ga) && symmetric(gb)) out.push_back(ga);  // f(x, y) of symmetric x and y
      else if (ga.herm && gb.herm && (op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div))
        out.push_back(ga);  // conj(x) op conj(y) = conj(x op y)
      else if (ga.anti && gb.anti && (op == Op::Add || op == Op::Sub)) out.push_back(ga);
      else if (ga.anti && gb.anti && (op == Op::Mul || op == Op::Div)) out.push_back({false, ga.dims});
    }
  return out;
}

// The value of a constant (a Full, or a broadcast one), if it is one.
std::optional<double> constant_of(const NodeRef& n) {
  const Node* f = n->op == Op::Expand ? n->inputs[0].get() : n.get();
  if (f->op != Op::Full) return std::nullopt;
  const FullAttrs a = attrs_of<FullAttrs>(*f);
  return is_inexact(a.dtype) ? a.real : static_cast<double>(a.integer);
}

// With a constant c: x op c and c op x keep the groups that op with a constant keeps (an
// antisymmetric one only where 0 op c stays 0: x * c of a finite c, x / c of a finite nonzero c).
std::vector<SymmetryGroup> with_constant(Op op, const Properties& x, bool x_first, std::optional<double> c) {
  const bool finite = c && std::isfinite(*c), nonzero = finite && *c != 0;
  std::vector<SymmetryGroup> out;
  for (const SymmetryGroup& g : x.groups) {
    if (g.herm) {  // a constant is real: conj(x) op c = conj(x op c), either side
      if (op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div) out.push_back(g);
      else if (op == Op::Eq || op == Op::Ne) out.push_back({false, g.dims});  // bool: symmetric
    } else if (!g.anti || (op == Op::Mul && finite) || (op == Op::Div && x_first && nonzero)) {
      out.push_back(g);
    }
  }
  return out;
}

Properties binary_properties(const NodeRef& n, Walk& w) {
  const NodeRef &a = n->inputs[0], &b = n->inputs[1];
  Properties out;
  const Properties pa = derive(a, w), pb = derive(b, w);
  SymmetryGroup g;
  const bool commutes = n->op == Op::Add || n->op == Op::Mul || n->op == Op::Maximum || n->op == Op::Minimum;
  if (commutes && (swapped_of(b, a, g) || swapped_of(a, b, g))) {
    out.groups.push_back(g);  // x + x^T
    return out;
  }
  if ((n->op == Op::Add || n->op == Op::Mul) && (conj_swapped_of(b, a, g) || conj_swapped_of(a, b, g))) {
    out.groups.push_back({false, g.dims, true});  // x + conj(x^T), x * conj(x^T): Hermitian
    return out;
  }
  if (n->op == Op::Sub && swapped_of(b, a, g)) {
    out.groups.push_back({true, g.dims});  // x - x^T
    return out;
  }
  if (pb.uniform) out.groups = with_constant(n->op, pa, true, constant_of(b));
  else if (pa.uniform) out.groups = with_constant(n->op, pb, false, constant_of(a));
  else out.groups = both(n->op, pa, pb);
  binary_tiles(n->op, pa, pb, out);
  if (pa.zero && pb.zero) out.zero = true;
  if (n->op == Op::Mul && (pa.zero || pb.zero) && !is_float(n->dtype)) out.zero = true;
  return out;
}

// Every dim of equal size in one symmetric group: a constant is unchanged by any permutation.
Properties uniform_properties(const NodeRef& n, bool zero) {
  Properties p;
  p.uniform = true;
  p.zero = zero;
  const Shape& s = n->shape;
  if (s.size() >= 2 && std::all_of(s.begin(), s.end(), [&](int64_t e) { return e == s[0]; })) {
    SymmetryGroup g;
    for (size_t d = 0; d < s.size(); ++d) g.dims.push_back(static_cast<int>(d));
    p.groups.push_back(g);
  }
  return p;
}

bool is_zero_constant(const Node& n) {
  if (n.op != Op::Full) return false;
  const FullAttrs a = attrs_of<FullAttrs>(n);
  return is_inexact(a.dtype) ? a.real == 0 : a.integer == 0;
}

int64_t choose(int64_t n, int64_t k) {
  if (k < 0 || k > n) return 0;
  double r = 1;
  for (int64_t i = 1; i <= k; ++i) r = r * static_cast<double>(n - k + i) / static_cast<double>(i);
  return static_cast<int64_t>(r + 0.5);
}

Properties derive_node(const NodeRef& n, Walk& w);

Properties derive(const NodeRef& n, Walk& w) {
  if (auto it = w.seen.find(n.get()); it != w.seen.end()) return it->second;
  if (--w.budget < 0) return {};  // unknown is always sound: nothing is claimed
  Properties p = derive_node(n, w);
  w.seen.emplace(n.get(), p);
  return p;
}

Properties derive_node(const NodeRef& n, Walk& w) {
  switch (n->op) {
    case Op::Declare: {
      Properties p;
      const PropertiesAttrs a = attrs_of<PropertiesAttrs>(*n);
      if (a.empty()) return p;  // x:dense(): nothing known
      if (!a.packed.empty()) {  // the packed form of a declared tensor
        p.packed_of = a;
        return p;
      }
      p.groups = a.groups;
      p.tiles = a.tiles;
      p.nonzero = a.nonzero;
      const Properties below = derive(n->inputs[0], w);  // what is known stays known
      p.zero = below.zero;
      p.diagonal = below.diagonal;
      return p;
    }
    case Op::Full: return uniform_properties(n, is_zero_constant(*n));
    case Op::Expand: {
      const NodeRef& x = n->inputs[0];
      if (x->op == Op::Full) return uniform_properties(n, is_zero_constant(*x));
      return {};
    }
    case Op::Eye: {
      Properties p;
      p.diagonal = true;
      if (n->shape[0] == n->shape[1]) p.groups.push_back({false, {0, 1}});
      return p;
    }
    case Op::Constrain:
    case Op::CheckDeclared: return derive(n->inputs[0], w);
    case Op::Matmul: {  // A A^T is symmetric, A A^H (and A^H A) Hermitian
      Properties p;
      SymmetryGroup g;
      const NodeRef &a = n->inputs[0], &b = n->inputs[1];
      if (n->shape.size() != 2 || a->shape.size() != 2) return p;
      if (swapped_of(b, a, g) || swapped_of(a, b, g)) p.groups.push_back({false, {0, 1}});
      else if (conj_swapped_of(b, a, g) || conj_swapped_of(a, b, g))
        p.groups.push_back({false, {0, 1}, true});
      return p;
    }
    case Op::Permute: {
      const std::vector<int> perm = attrs_of<PermuteAttrs>(*n).perm;  // out i = in perm[i]
      std::vector<int> where(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) where[perm[i]] = static_cast<int>(i);
      Properties p = derive(n->inputs[0], w);
      for (SymmetryGroup& g : p.groups) {
        for (int& d : g.dims) d = where[d];
        std::sort(g.dims.begin(), g.dims.end());
      }
      if (!p.tiles.empty()) {  // the tile grid permuted the same way
        const Shape grid = tile_grid(n->inputs[0]->shape, p.tiles);
        std::vector<int64_t> tiles(perm.size());
        Shape out_grid(perm.size());
        for (size_t i = 0; i < perm.size(); ++i) {
          tiles[i] = p.tiles[perm[i]];
          out_grid[i] = grid[perm[i]];
        }
        std::vector<bool> nz(p.nonzero.size());
        std::vector<int64_t> idx(perm.size(), 0);
        for (size_t t = 0; t < nz.size(); ++t) {  // idx: the output tile's index
          int64_t in = 0;
          for (size_t d = 0; d < perm.size(); ++d) {
            int64_t stride = 1;
            for (size_t e = d + 1; e < perm.size(); ++e) stride *= grid[e];
            in += idx[where[d]] * stride;
          }
          nz[t] = p.nonzero[static_cast<size_t>(in)];
          for (int d = static_cast<int>(perm.size()) - 1; d >= 0 && ++idx[d] == out_grid[d]; --d) idx[d] = 0;
        }
        p.tiles = std::move(tiles);
        p.nonzero = std::move(nz);
      }
      return p;
    }
    default: break;
  }
  if (op_kind(n->op) != OpKind::Map) return {};
  if (n->inputs.size() == 1) {
    const Properties x = derive(n->inputs[0], w);
    Properties p;
    for (const SymmetryGroup& g : x.groups) {
      if (g.herm) {
        if (is_complex(n->dtype) && conj_op(n->op)) p.groups.push_back(g);
        else if (n->op == Op::Imag) p.groups.push_back({true, g.dims});  // imag(conj z) = -imag z
        else if (n->op == Op::Real || n->op == Op::Abs || n->op == Op::Cast)
          p.groups.push_back({false, g.dims});
      } else if (!g.anti || odd_op(n->op) ||
                 (n->op == Op::Cast && cast_keeps_anti(n->inputs[0]->dtype, n->dtype))) {
        p.groups.push_back(g);
      } else if (even_op(n->op)) {
        p.groups.push_back({false, g.dims});
      }
    }
    if (n->op == Op::Cast && n->dtype == DType::Bool)  // bool(-x) = bool(x): symmetric, never anti
      for (SymmetryGroup& g : p.groups) g.anti = false;
    p.zero = x.zero && keeps_zero(n->op);
    if (keeps_zero(n->op)) {
      p.tiles = x.tiles;
      p.nonzero = x.nonzero;
    }
    p.uniform = x.uniform;
    return p;
  }
  if (n->inputs.size() == 2) return binary_properties(n, w);
  return {};
}

}  // namespace

Properties properties_of(const NodeRef& n) {
  Walk w;
  return derive(n, w);
}

int64_t stored_elements(const NodeRef& n) {
  const Properties p = properties_of(n);
  if (p.zero) return 0;
  if (p.diagonal) return std::min(n->shape[0], n->shape[1]);
  if (!p.tiles.empty()) {  // the elements of the nonzero tiles (edge tiles clipped)
    const Shape grid = tile_grid(n->shape, p.tiles);
    std::vector<int64_t> idx(grid.size(), 0);
    int64_t count = 0;
    for (const bool nz : p.nonzero) {
      int64_t e = 1;
      for (size_t d = 0; d < grid.size(); ++d) e *= std::min(p.tiles[d], n->shape[d] - idx[d] * p.tiles[d]);
      if (nz) count += e;
      for (int d = static_cast<int>(grid.size()) - 1; d >= 0 && ++idx[d] == grid[d]; --d) idx[d] = 0;
    }
    return count;
  }
  std::vector<bool> grouped(n->shape.size(), false);
  int64_t count = 1;
  for (const SymmetryGroup& g : p.groups) {
    const int64_t m = n->shape[g.dims[0]], k = static_cast<int64_t>(g.dims.size());
    count *= g.anti ? choose(m, k) : choose(m + k - 1, k);
    for (int d : g.dims) grouped[d] = true;
  }
  for (size_t d = 0; d < grouped.size(); ++d)
    if (!grouped[d]) count *= n->shape[d];
  return count;
}

Shape tile_grid(const Shape& shape, const std::vector<int64_t>& tiles) {
  Shape g(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) g[d] = (shape[d] + tiles[d] - 1) / tiles[d];
  return g;
}

std::string group_str(const SymmetryGroup& g) {
  std::string s = g.herm ? "hermitian{" : g.anti ? "antisymmetric{" : "symmetric{";
  for (size_t i = 0; i < g.dims.size(); ++i) s += (i ? "," : "") + std::to_string(g.dims[i] + 1);
  return s + "}";
}

}  // namespace tapestry
