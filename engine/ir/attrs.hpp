// Typed op attributes: one struct per op family, with named fields, over the Attrs a node stores.
//   NodeRef c = make_node(Op::Conv2d, {x, w}, Conv2dAttrs{{2, 2}, {1, 1}, {1, 1}, 1}.encode(), s, t);
//   const Conv2dAttrs a = attrs_of<Conv2dAttrs>(*c);  // a.stride[0] == 2; checks c's op has them
// Attrs (node.hpp) stays the storage: interning, plan keys and the plan wire use it as it is.
// TAPESTRY_OPS (op.hpp) names each op's struct (NoAttrs for none): attrs_type<Op::Slice> is
// SliceAttrs, and an op cannot be added without one. The fused ops' structs are in fused.hpp.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "engine/ir/error.hpp"
#include "engine/ir/fused.hpp"
#include "engine/ir/load_attrs.hpp"
#include "engine/ir/node.hpp"

namespace tapestry {

// Each struct: encode() gives the Attrs a builder interns; decode() reads them back and
// internal_checks their sizes (only builders and fusion make nodes).

// Reshape, Expand, Matmul and every map but Cast: the shape and inputs say it all.
struct NoAttrs {
  Attrs encode() const { return {}; }
  static NoAttrs decode(const Attrs&) { return {}; }
  bool operator==(const NoAttrs&) const = default;
};

struct SourceAttrs {
  uint64_t id = 0;  // the node's own id: a source is never merged with another
  Attrs encode() const;
  static SourceAttrs decode(const Attrs& a);
  bool operator==(const SourceAttrs&) const = default;
};

struct FullAttrs {
  DType dtype = DType::F32;
  double real = 0;      // the value for float dtypes
  int64_t integer = 0;  // the exact value for integer and bool dtypes
  Attrs encode() const;
  static FullAttrs decode(const Attrs& a);
  bool operator==(const FullAttrs&) const = default;
};

// first + step * i; the integers are exact for integer dtypes.
struct ArangeAttrs {
  DType dtype = DType::F32;
  double first = 0, step = 1;
  int64_t int_first = 0, int_step = 1;
  Attrs encode() const;
  static ArangeAttrs decode(const Attrs& a);
  bool operator==(const ArangeAttrs&) const = default;
};

struct LinspaceAttrs {  // n = the shape: first, ..., last inclusive
  DType dtype = DType::F32;
  double first = 0, last = 0;
  Attrs encode() const;
  static LinspaceAttrs decode(const Attrs& a);
  bool operator==(const LinspaceAttrs&) const = default;
};

struct EyeAttrs {  // {n, m} is the shape
  DType dtype = DType::F32;
  Attrs encode() const;
  static EyeAttrs decode(const Attrs& a);
  bool operator==(const EyeAttrs&) const = default;
};

struct RandAttrs {  // Rand and Randn
  DType dtype = DType::F32;
  uint64_t seed = 0;
  Attrs encode() const;
  static RandAttrs decode(const Attrs& a);
  bool operator==(const RandAttrs&) const = default;
};

struct CastAttrs {
  DType to = DType::F32;
  Attrs encode() const;
  static CastAttrs decode(const Attrs& a);
  bool operator==(const CastAttrs&) const = default;
};

struct ReduceAttrs {      // Sum, Prod, Max, Min, All, Any; the output drops the dims
  std::vector<int> dims;  // 0-based ascending
  Attrs encode() const;
  static ReduceAttrs decode(const Attrs& a);
  bool operator==(const ReduceAttrs&) const = default;
};

struct ArgReduceAttrs {    // ArgMax, ArgMin; the output drops the dim
  std::optional<int> dim;  // 0-based; none: the flat index over all dims
  Attrs encode() const;
  static ArgReduceAttrs decode(const Attrs& a);
  bool operator==(const ArgReduceAttrs&) const = default;
};

struct PermuteAttrs {
  std::vector<int> perm;  // output dim i is input dim perm[i]
  Attrs encode() const;
  static PermuteAttrs decode(const Attrs& a);
  bool operator==(const PermuteAttrs&) const = default;
};

struct SliceAttrs {                    // x[starts + steps * y]; the shape is the counts
  std::vector<int64_t> starts, steps;  // 0-based, one per dim
  Attrs encode() const;
  static SliceAttrs decode(const Attrs& a);
  bool operator==(const SliceAttrs&) const = default;
};

// In ConstrainAttrs::parts: one part per rank of the mesh being planned (tp.split(d)).
inline constexpr int64_t kPartsPerRank = 0;

struct ConstrainAttrs {        // the layout the planner must give the node
  std::vector<int64_t> parts;  // per dim; 1 = not split; kPartsPerRank: the planned mesh's ranks
  bool replicated = false;     // a whole copy on every rank (tp.replicated()); parts all 1
  // parts with kPartsPerRank resolved for a mesh of `ranks` (at most the dim's size).
  std::vector<int64_t> on(int ranks, const Shape& shape) const;
  Attrs encode() const;
  static ConstrainAttrs decode(const Attrs& a);
  bool operator==(const ConstrainAttrs&) const = default;
};

// A permutational symmetry group: the tensor is unchanged (symmetric) or changes sign
// (antisymmetric) when any two of `dims` (0-based, ascending, equal sizes) are swapped.
struct SymmetryGroup {
  bool anti = false;  // an odd permutation of the dims negates
  std::vector<int> dims;
  bool herm = false;  // Hermitian (complex, a pair): a swap conjugates; never with anti
  bool operator==(const SymmetryGroup&) const = default;
};

// What x:declare says of a tensor (engine/ir/properties.hpp derives them through ops).
struct PropertiesAttrs {
  std::vector<SymmetryGroup> groups;  // disjoint
  // Block sparsity: tile extents per dim (empty: none), and per tile of the grid (row-major,
  // ceil(shape / tiles) tiles per dim) whether it may hold a nonzero.
  std::vector<int64_t> tiles;
  std::vector<bool> nonzero;
  // Not empty: the tensor is the packed storage (engine/ir/build/packed.hpp) of a tensor of
  // this shape with the groups or tiles above (a named tensor's stored form, never a user's).
  std::vector<int64_t> packed;
  bool empty() const { return groups.empty() && tiles.empty(); }
  Attrs encode() const;
  static PropertiesAttrs decode(const Attrs& a);
  bool operator==(const PropertiesAttrs&) const = default;
};

struct CatAttrs {
  int dim = 0;
  Attrs encode() const;
  static CatAttrs decode(const Attrs& a);
  bool operator==(const CatAttrs&) const = default;
};

struct WriteAttrs {            // WriteRegion: inputs {base, value}; value's shape is the box
  std::vector<int64_t> start;  // 0-based, per dim
  Attrs encode() const;
  static WriteAttrs decode(const Attrs& a);
  bool operator==(const WriteAttrs&) const = default;
};

// Correlate: inputs {x, k} of one rank and dtype; out[y] = sum_r x[y - pad_before + r] * k[r],
// with x read as 0 outside its bounds.
struct CorrelateAttrs {
  std::vector<int64_t> pad_before, pad_after;  // per dim
  Attrs encode() const;
  static CorrelateAttrs decode(const Attrs& a);
  bool operator==(const CorrelateAttrs&) const = default;
};

// Gather, Scatter, ScatterAdd: inputs {x, index (i32 or i64)[, src]}, index of x's shape except
// along dim (Gather's output and Scatter's src have index's shape). fn is the function the user
// called: the kernels name it when an index value is out of range.
enum class IndexFn : int64_t { Gather, Take, IndexSelect, Subscript, Scatter, ScatterAdd, MaskedWrite };
std::string_view index_fn_name(IndexFn f);
struct IndexAttrs {
  int dim = 0;  // 0-based
  IndexFn fn = IndexFn::Gather;
  Attrs encode() const;
  static IndexAttrs decode(const Attrs& a);
  bool operator==(const IndexAttrs&) const = default;
};

// Conv2d: inputs {x {N,C,H,W}, w {O,C/groups,KH,KW}} of one dtype; output {N,O,OH,OW}.
// The Line ops (scans, Sort, LineScatterAdd, Searchsorted): along one dim.
struct LineAttrs {
  int64_t dim = 0;       // 0-based; Searchsorted: unused (the sorted sequence is 1-D)
  bool reverse = false;  // scans: from the last element back (gradients); Sort: descending; Fft: inverse
  bool indices = false;  // Sort, Cummax, Cummin: the 1-based indices (i64), not the values
  bool right = false;    // Searchsorted: after equal elements (numpy side='right')
  Attrs encode() const;
  static LineAttrs decode(const Attrs& a);
  bool operator==(const LineAttrs&) const = default;
};

// Qr, Svd, Eigh: which parts the packed output holds (engine/ir/build/builders_linalg.cpp).
struct LinalgAttrs {
  int64_t mode = 0;  // Qr: 0 reduced, 1 complete; Svd: 0 values only, 1 reduced, 2 full;
                     // Eigh: 0 values only, 1 values and vectors
  Attrs encode() const;
  static LinalgAttrs decode(const Attrs& a);
  bool operator==(const LinalgAttrs&) const = default;
};

struct Conv2dAttrs {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};  // {h, w}
  int64_t groups = 1;
  Attrs encode() const;
  static Conv2dAttrs decode(const Attrs& a);
  bool operator==(const Conv2dAttrs&) const = default;
};

struct PoolAttrs {                                                   // MaxPool2d, AvgPool2d over NCHW
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0};  // {h, w}
  Attrs encode() const;
  static PoolAttrs decode(const Attrs& a);
  bool operator==(const PoolAttrs&) const = default;
};

template <class A>
concept OpAttrs = requires(const A& a, const Attrs& s) {
  { a.encode() } -> std::same_as<Attrs>;
  { A::decode(s) } -> std::same_as<A>;
};

// attrs_type<op>: the struct TAPESTRY_OPS names for op.
template <Op op> struct attrs_type_of;
#define TAPESTRY_OP_ATTRS_TYPE(e, name, kind, arity, attrs, doc) \
  template <> struct attrs_type_of<Op::e> { using type = attrs; };
TAPESTRY_OPS(TAPESTRY_OP_ATTRS_TYPE)
#undef TAPESTRY_OP_ATTRS_TYPE
template <Op op> using attrs_type = typename attrs_type_of<op>::type;

// Every struct but the fused ones (decoded with their node: fused.hpp) encodes and decodes.
// clang-format off
#define TAPESTRY_OP_ATTRS_CHECK(e, name, kind, arity, attrs, doc) \
  static_assert(OpKind::kind == OpKind::Fused || OpAttrs<attrs>, #attrs " of " #e " must encode and decode");
// clang-format on
TAPESTRY_OPS(TAPESTRY_OP_ATTRS_CHECK)
#undef TAPESTRY_OP_ATTRS_CHECK

// Whether op's attrs are an A.
template <class A> constexpr bool carries(Op op) {
  switch (op) {
#define TAPESTRY_OP_CARRIES(e, name, kind, arity, attrs, doc) \
  case Op::e: return std::is_same_v<A, attrs>;
    TAPESTRY_OPS(TAPESTRY_OP_CARRIES)
#undef TAPESTRY_OP_CARRIES
    default: return false;
  }
}

// The attrs of an op known to carry an A (kernels get the op and its Attrs apart).
template <OpAttrs A> A attrs_of(Op op, const Attrs& a) {
  internal_check(carries<A>(op));
  return A::decode(a);
}

template <class A> A attrs_of(const Node& n) {
  if constexpr (std::is_same_v<A, FusedProgram>) {
    return decode_fused_map(n);
  } else if constexpr (std::is_same_v<A, FusedReduction>) {
    return decode_fused_reduce(n);
  } else {
    return attrs_of<A>(n.op, n.attrs);
  }
}

}  // namespace tapestry
