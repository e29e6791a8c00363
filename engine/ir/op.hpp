// The op registry: every operation of the expression graph, in one table.
//   const OpDef& d = op_def(Op::Add);   // d.name == "add", d.kind == OpKind::Map
//   for (const OpDef& d : all_ops()) ...  // docs, :help and the registry tests walk this
// Adding an op: one line in TAPESTRY_OPS (naming its attrs struct), a builder in builders.cpp, a
// kernel case.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace tapestry {

enum class OpKind : uint8_t {
  Source,     // data held by the node (tp.tensor, materialized values)
  Generate,   // values computed from the element index alone (full, arange, rand)
  Map,        // elementwise over the output shape; inputs have the output's shape
  Reduce,     // a monoid over some dims (sum, max, ...)
  ArgReduce,  // index of the max/min along one dim
  Matmul,     // batched matrix product
  View,       // reshape / permute / expand / slice: data movement only
  Cat,        // concatenation along one dim
  Write,      // a copy of a tensor with one box replaced (region writes)
  Window,     // sliding windows: stencil correlation, conv2d, pooling (kernels/cpu/window.cpp)
  Line,       // whole lines along one dim, every other dim free: scans, sort, searchsorted, fft
              // (kernels/cpu/line.cpp)
  Index,      // data-dependent reads and writes along one dim: gather, scatter, nonzero
              // (kernels/cpu/index.cpp); the indexed dim is read whole
  Linalg,     // LAPACK on whole matrices (the last two dims of each input), batched over the
              // leading dims; factorizations pack their parts into the output's last dim
  Fused,      // made by fusion (engine/plan/fuse.hpp), never by a builder: a map program,
              // optionally reduced; attrs encode the program (engine/ir/fused.hpp)
};

// X(enum, name, kind, arity(-1 = variadic), attrs struct (engine/ir/attrs.hpp), doc)
// clang-format off
#define TAPESTRY_OPS(X)                                                                  \
  X(Source, "source", Source, 0, SourceAttrs, "data given by the user or materialized by an observation") \
  X(Full, "full", Generate, 0, FullAttrs, "every element equal to one value")             \
  X(Arange, "arange", Generate, 0, ArangeAttrs, "first + step * i along a 1-D tensor")    \
  X(Linspace, "linspace", Generate, 0, LinspaceAttrs, "n evenly spaced points from a to b inclusive") \
  X(Eye, "eye", Generate, 0, EyeAttrs, "ones on the main diagonal, zeros elsewhere")      \
  X(Rand, "rand", Generate, 0, RandAttrs, "uniform [0,1) from Philox-4x32 keyed by (seed, element index)") \
  X(Randn, "randn", Generate, 0, RandAttrs, "standard normal from Philox-4x32 keyed by (seed, element index)") \
  X(Load, "load", Generate, 0, LoadAttrs, "a box of an array in a file, read where it is needed when observed") \
  X(Cast, "cast", Map, 1, CastAttrs, "convert to another dtype (float to int truncates toward zero)") \
  X(Neg, "neg", Map, 1, NoAttrs, "-x")                                                    \
  X(Abs, "abs", Map, 1, NoAttrs, "|x|")                                                   \
  X(Exp, "exp", Map, 1, NoAttrs, "e^x")                                                   \
  X(Log, "log", Map, 1, NoAttrs, "natural logarithm")                                     \
  X(Sqrt, "sqrt", Map, 1, NoAttrs, "square root")                                         \
  X(Rsqrt, "rsqrt", Map, 1, NoAttrs, "1 / sqrt(x)")                                       \
  X(Sin, "sin", Map, 1, NoAttrs, "sine")                                                  \
  X(Cos, "cos", Map, 1, NoAttrs, "cosine")                                                \
  X(Tanh, "tanh", Map, 1, NoAttrs, "hyperbolic tangent")                                  \
  X(Sigmoid, "sigmoid", Map, 1, NoAttrs, "1 / (1 + e^-x)")                                \
  X(Relu, "relu", Map, 1, NoAttrs, "max(x, 0)")                                           \
  X(Gelu, "gelu", Map, 1, NoAttrs, "x * Phi(x), the exact (erf) form")                    \
  X(Floor, "floor", Map, 1, NoAttrs, "round toward -inf")                                 \
  X(Ceil, "ceil", Map, 1, NoAttrs, "round toward +inf")                                   \
  X(Round, "round", Map, 1, NoAttrs, "round half to even, as numpy")                      \
  X(Sign, "sign", Map, 1, NoAttrs, "-1, 0 or 1")                                          \
  X(Square, "square", Map, 1, NoAttrs, "x * x")                                           \
  X(Reciprocal, "reciprocal", Map, 1, NoAttrs, "1 / x")                                   \
  X(LogicalNot, "logical_not", Map, 1, NoAttrs, "not x (x ~= 0)")                         \
  X(Add, "add", Map, 2, NoAttrs, "a + b")                                                 \
  X(Sub, "sub", Map, 2, NoAttrs, "a - b")                                                 \
  X(Mul, "mul", Map, 2, NoAttrs, "a * b (elementwise)")                                   \
  X(Div, "div", Map, 2, NoAttrs, "a / b (true division; integers give floats)")           \
  X(FloorDiv, "floordiv", Map, 2, NoAttrs, "numpy's floor division (divmod: (a - fmod(a, b)) / b rounded); integer division by 0 gives 0") \
  X(Mod, "mod", Map, 2, NoAttrs, "fmod(a, b) moved to the sign of b, as Lua and numpy") \
  X(Pow, "pow", Map, 2, NoAttrs, "a ^ b")                                                 \
  X(Maximum, "maximum", Map, 2, NoAttrs, "elementwise max (NaN propagates)")              \
  X(Minimum, "minimum", Map, 2, NoAttrs, "elementwise min (NaN propagates)")              \
  X(Atan2, "atan2", Map, 2, NoAttrs, "angle of (b, a): atan2(a, b)")                      \
  X(Eq, "eq", Map, 2, NoAttrs, "a == b")                                                  \
  X(Ne, "ne", Map, 2, NoAttrs, "a ~= b")                                                  \
  X(Lt, "lt", Map, 2, NoAttrs, "a < b")                                                   \
  X(Le, "le", Map, 2, NoAttrs, "a <= b")                                                  \
  X(Gt, "gt", Map, 2, NoAttrs, "a > b")                                                   \
  X(Ge, "ge", Map, 2, NoAttrs, "a >= b")                                                  \
  X(LogicalAnd, "logical_and", Map, 2, NoAttrs, "a and b")                                \
  X(LogicalOr, "logical_or", Map, 2, NoAttrs, "a or b")                                   \
  X(Where, "where", Map, 3, NoAttrs, "cond ? a : b")                                      \
  X(Real, "real", Map, 1, NoAttrs, "the real part of a complex number")                   \
  X(Imag, "imag", Map, 1, NoAttrs, "the imaginary part of a complex number")              \
  X(Conj, "conj", Map, 1, NoAttrs, "the complex conjugate re - i im")                     \
  X(Angle, "angle", Map, 1, NoAttrs, "the argument atan2(im, re) of a complex number")    \
  X(Complex, "complex", Map, 2, NoAttrs, "re + i im from two real tensors of one float dtype") \
  X(Sum, "sum", Reduce, 1, ReduceAttrs, "sum over dims")                                  \
  X(Prod, "prod", Reduce, 1, ReduceAttrs, "product over dims")                            \
  X(Max, "max", Reduce, 1, ReduceAttrs, "maximum over dims (NaN propagates)")             \
  X(Min, "min", Reduce, 1, ReduceAttrs, "minimum over dims (NaN propagates)")             \
  X(All, "all", Reduce, 1, ReduceAttrs, "logical and over dims")                          \
  X(Any, "any", Reduce, 1, ReduceAttrs, "logical or over dims")                           \
  X(ArgMax, "argmax", ArgReduce, 1, ArgReduceAttrs, "1-based index of the first maximum along a dim") \
  X(ArgMin, "argmin", ArgReduce, 1, ArgReduceAttrs, "1-based index of the first minimum along a dim") \
  X(Matmul, "matmul", Matmul, 2, NoAttrs, "batched matrix product [...,n,k] @ [...,k,m]") \
  X(Correlate, "correlate", Window, 2, CorrelateAttrs, "n-D correlation with a kernel, zero padded (tp.stencil)") \
  X(Conv2d, "conv2d", Window, 2, Conv2dAttrs, "2-D convolution, NCHW, with stride, padding, dilation, groups") \
  X(MaxPool2d, "maxpool2d", Window, 1, PoolAttrs, "maximum over 2-D windows of NCHW (padding never wins)") \
  X(AvgPool2d, "avgpool2d", Window, 1, PoolAttrs, "mean over 2-D windows of NCHW, padding counted as zeros") \
  X(Gather, "gather", Index, 2, IndexAttrs, "out[..i..] = x[..index[..i..]..] along dim (torch.gather, 1-based)") \
  X(Scatter, "scatter", Index, 3, IndexAttrs, "x with x[..index[..i..]..] = src[..i..] along dim (torch.scatter, 1-based)") \
  X(ScatterAdd, "scatter_add", Index, 3, IndexAttrs, "x with src[..i..] added at x[..index[..i..]..] along dim (torch.scatter_add)") \
  X(Nonzero, "nonzero", Index, 1, NoAttrs, "1-based flat indices of the nonzero elements, in order (its size is the count)") \
  X(Solve, "solve", Linalg, 2, NoAttrs, "x with a x = b, a {..., n, n}, b {..., n, k} (LAPACK gesv)") \
  X(Cholesky, "cholesky", Linalg, 1, NoAttrs, "lower-triangular l with l l^T = a (LAPACK potrf)") \
  X(Det, "det", Linalg, 1, NoAttrs, "determinant from the LU factorization (LAPACK getrf)") \
  X(Slogdet, "slogdet", Linalg, 1, NoAttrs, "{..., 2}: sign and log|det| (LAPACK getrf)") \
  X(Qr, "qr", Linalg, 1, LinalgAttrs, "Q and R packed in the last dim (LAPACK geqrf, orgqr)") \
  X(Svd, "svd", Linalg, 1, LinalgAttrs, "U, S and Vh packed in the last dim (LAPACK gesdd)") \
  X(Eigh, "eigh", Linalg, 1, LinalgAttrs, "eigenvalues (ascending) and eigenvectors packed in the last dim (LAPACK syevd)") \
  X(CheckDeclared, "check_declared", Linalg, 1, PropertiesAttrs, "the input, checked whole on one rank against declared properties") \
  X(Cumsum, "cumsum", Line, 1, LineAttrs, "running sum along a dim (ints and bools to i64)") \
  X(Cumprod, "cumprod", Line, 1, LineAttrs, "running product along a dim (ints and bools to i64)") \
  X(Cummax, "cummax", Line, 1, LineAttrs, "running maximum along a dim (or its 1-based index), NaN propagates") \
  X(Cummin, "cummin", Line, 1, LineAttrs, "running minimum along a dim (or its 1-based index), NaN propagates") \
  X(Logcumsumexp, "logcumsumexp", Line, 1, LineAttrs, "log of the running sum of exp along a dim, stable") \
  X(Sort, "sort", Line, 1, LineAttrs, "stable sort along a dim: the values, or their 1-based indices") \
  X(LineScatterAdd, "line_scatter_add", Line, 2, LineAttrs, "out[.., idx[i], ..] += g[.., i, ..] along a dim (gradients of sort and cummax)") \
  X(Searchsorted, "searchsorted", Line, 2, LineAttrs, "1-based insertion points of values into a sorted 1-D sequence") \
  X(Fft, "fft", Line, 1, LineAttrs, "unnormalized DFT of complex lines along a dim (FFTW); reverse: the inverse, e^(+i)") \
  X(Reshape, "reshape", View, 1, NoAttrs, "same elements in row-major order, another shape") \
  X(Permute, "permute", View, 1, PermuteAttrs, "reorder dimensions")                      \
  X(Expand, "expand", View, 1, NoAttrs, "broadcast size-1 (or missing leading) dims")     \
  X(Slice, "slice", View, 1, SliceAttrs, "a strided box of the input")                    \
  X(Constrain, "constrain", View, 1, ConstrainAttrs, "the input, with its layout fixed (x:constrain)") \
  X(Declare, "declare", View, 1, PropertiesAttrs, "the input, with declared properties (symmetry groups; x:declare)") \
  X(Cat, "cat", Cat, -1, CatAttrs, "concatenate along one dim")                           \
  X(WriteRegion, "write_region", Write, 2, WriteAttrs, "base with the box at start replaced by value") \
  X(FusedMap, "fused_map", Fused, -1, FusedProgram, "a group of maps computed in one pass (made by fusion)") \
  X(FusedReduce, "fused_reduce", Fused, -1, FusedReduction, "a group of maps reduced over dims in one op (made by fusion)")
// clang-format on

enum class Op : uint16_t {
#define TAPESTRY_OP_ENUM(e, name, kind, arity, attrs, doc) e,
  TAPESTRY_OPS(TAPESTRY_OP_ENUM)
#undef TAPESTRY_OP_ENUM
      Count
};
inline constexpr int kNumOps = static_cast<int>(Op::Count);

struct OpDef {
  Op op;
  std::string_view name;
  OpKind kind;
  int arity;  // -1: any number of inputs
  std::string_view doc;
};

const OpDef& op_def(Op op);

// The Map ops that take complex operands (c64, c128): every other Map op refuses them when the
// graph is built (numpy orders complex numbers lexicographically; Tapestry has no order on
// them, so comparisons other than == and ~=, max, min, sort and the rounding ops refuse).
constexpr bool map_takes_complex(Op op) {
  switch (op) {
    case Op::Cast:
    case Op::Where:
    case Op::Neg:
    case Op::Abs:
    case Op::Exp:
    case Op::Log:
    case Op::Sqrt:
    case Op::Sin:
    case Op::Cos:
    case Op::Square:
    case Op::Reciprocal:
    case Op::LogicalNot:
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Pow:
    case Op::Eq:
    case Op::Ne:
    case Op::Real:
    case Op::Imag:
    case Op::Conj:
    case Op::Angle: return true;
    default: return false;
  }
}
std::span<const OpDef> all_ops();
std::string_view op_kind_name(OpKind k);
inline OpKind op_kind(Op op) { return op_def(op).kind; }

}  // namespace tapestry
