// Node builders: validate the operands, infer shape and dtype, add the node.
//   NodeRef y = build::binary(Op::Add, Operand(x), Operand::number(2));  // x + 2
//   NodeRef s = build::reduce(Op::Sum, y, {0}, /*keepdim=*/false);
// Everything knowable at build time fails here with an Error whose message names
// the argument and the shapes; the Lua layer prefixes the function ("tp.add: ...").
// Dimensions are 0-based here; the Lua layer converts from 1-based.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/ir/attrs.hpp"
#include "engine/ir/node.hpp"

namespace tapestry::build {

// An operand of a map op: a tensor, or a Lua number/boolean that is "weak" in
// type promotion (x_f32 * 2.5 stays f32; x_i32 * 2.5 is f64, as numpy 2).
struct Operand {
  NodeRef node;
  bool weak = false;
  ScalarKind kind = ScalarKind::Float;
  double real = 0;
  int64_t integer = 0;

  Operand() = default;
  Operand(NodeRef n) : node(std::move(n)) {}  // NOLINT: implicit on purpose
  static Operand number(double v);            // a Lua float
  static Operand integer_number(int64_t v);   // a Lua integer
  static Operand boolean(bool v);
};

// --- generators ----------------------------------------------------------------
NodeRef full(const Shape& shape, double value, DType dtype);
NodeRef full_int(const Shape& shape, int64_t value, DType dtype);            // exact for i64
NodeRef scalar(const Operand& s, DType dtype);                               // a weak operand as a {} tensor
NodeRef arange(double first, double last, double step, DType dtype);         // inclusive
NodeRef arange_int(int64_t first, int64_t last, int64_t step, DType dtype);  // exact, integer dtypes
NodeRef linspace(double a, double b, int64_t n, DType dtype);
NodeRef eye(int64_t n, int64_t m, DType dtype);
NodeRef rand(const Shape& shape, uint64_t seed, DType dtype);
NodeRef randn(const Shape& shape, uint64_t seed, DType dtype);
void check_shape(const Shape& shape, const char* what);  // sizes >= 0 (0: empty), fits in memory

// --- maps ------------------------------------------------------------------------
NodeRef cast(const NodeRef& x, DType to);
NodeRef unary(Op op, const NodeRef& x);
NodeRef binary(Op op, const Operand& a, const Operand& b);
NodeRef where(const Operand& cond, const Operand& a, const Operand& b);
// numpy's real, imag, conj and angle (op Real, Imag, Conj, Angle); of a real x: x, zeros, x and
// atan2(0, x). unary(op, x) comes here for these ops too.
NodeRef complex_part(Op op, const NodeRef& x);
// tp.complex(re, im): re + i im, the parts broadcast and promoted to f32 (c64) or f64 (c128).
NodeRef make_complex(const Operand& re, const Operand& im);
NodeRef clamp(const NodeRef& x, std::optional<Operand> lo, std::optional<Operand> hi);

// --- reductions (dims: 0-based, any order, no repeats; empty = all dims) -----------------
NodeRef reduce(Op op, const NodeRef& x, std::vector<int> dims, bool keepdim);
NodeRef mean(const NodeRef& x, std::vector<int> dims, bool keepdim);
NodeRef var(const NodeRef& x, std::vector<int> dims, double correction, bool keepdim);
NodeRef std_dev(const NodeRef& x, std::vector<int> dims, double correction, bool keepdim);
NodeRef norm(const NodeRef& x, double p, std::vector<int> dims, bool keepdim);
NodeRef argreduce(Op op, const NodeRef& x, std::optional<int> dim, bool keepdim);

// --- contractions ----------------------------------------------------------------------
NodeRef matmul(const NodeRef& a, const NodeRef& b);  // numpy's matmul rules

// --- shape -------------------------------------------------------------------------------
NodeRef reshape(const NodeRef& x, Shape shape);  // one -1 allowed
NodeRef permute(const NodeRef& x, const std::vector<int>& perm);
NodeRef transpose(const NodeRef& x, int d1, int d2);
NodeRef expand(const NodeRef& x, Shape shape);  // -1 keeps a dim
NodeRef squeeze(const NodeRef& x, std::optional<int> dim);
NodeRef unsqueeze(const NodeRef& x, int dim);  // dim in 0..rank
NodeRef flatten(const NodeRef& x, int first, int last);
NodeRef slice(const NodeRef& x, std::vector<int64_t> start, std::vector<int64_t> step, Shape count);
NodeRef narrow(const NodeRef& x, int dim, int64_t first, int64_t len);  // first 0-based
NodeRef select(const NodeRef& x, int dim, int64_t index);               // index 0-based
NodeRef cat(const std::vector<NodeRef>& xs, int dim);
NodeRef stack(const std::vector<NodeRef>& xs, int dim);  // dim in 0..rank
NodeRef broadcast_to(const NodeRef& x, const Shape& shape);
// x with its layout fixed to `parts` pieces per dim (x:constrain(tp.grid{...})), or to a whole
// copy on every rank (x:constrain(tp.replicated())).
NodeRef constrain(const NodeRef& x, std::vector<int64_t> parts, bool replicated = false);
// base with the box [start, start+count) replaced by value (cast to base's dtype and
// broadcast to count), as `tp.env.w[{...}] = value`.
NodeRef write_region(const NodeRef& base, std::vector<int64_t> start, const Shape& count,
                     const Operand& value);

// --- windows and padding (builders_window.cpp) -------------------------------------------
// Pad and roll are built from slices and cats (no op of their own): their signatures are then
// the clipped, shifted projections of cat, so a sharded pad or roll moves only the rows a block
// needs. Stencils, convolutions and pools are Window ops whose input projections carry the
// stride as the coefficient and the kernel as the window (engine/poly/stencil.hpp).
enum class PadMode { Constant, Reflect, Periodic };
// before/after per dim (>= 0). Constant fills with `value` cast to x's dtype as x:cast would
// (truncated for integers, nonzero is true; a Lua integer stays exact); Reflect mirrors without
// repeating the edge (numpy "reflect", pads < size); Periodic wraps (pads <= size).
NodeRef pad(const NodeRef& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
            PadMode mode, const Operand& value);
NodeRef pad(const NodeRef& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
            PadMode mode, double value);
// numpy.roll: out[i] = x[(i - shift) mod n] along dim, or over the flattened tensor (nullopt).
NodeRef roll(const NodeRef& x, int64_t shift, std::optional<int> dim);
// n-D correlation with a centred kernel of odd sizes; the output has x's shape. Zero boundary
// is the Correlate op's own clipped window; periodic and reflect pad first.
enum class Boundary { Zero, Periodic, Reflect };
NodeRef stencil(const NodeRef& x, const NodeRef& k, Boundary boundary);
// out[y] = sum_r x[y - before + r] * k[r] over the zero-padded x (the Correlate op).
NodeRef correlate(const NodeRef& x, const NodeRef& k, const std::vector<int64_t>& before,
                  const std::vector<int64_t>& after);
struct Conv2dOptions {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};  // zeros on both sides; less than the dilated kernel
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};
// x {N,C,H,W} (*) w {O,C/groups,KH,KW} -> {N,O,OH,OW}, OH = (H + 2p - d(KH-1) - 1) / s + 1.
NodeRef conv2d(const NodeRef& x, const NodeRef& w, const Conv2dOptions& o);
// MaxPool2d / AvgPool2d over NCHW; padding <= kernel/2. Avg divides by the whole window,
// padding included (count_include_pad), and gives floats (ints become f64).
NodeRef pool2d(Op op, const NodeRef& x, const int64_t kernel[2], const int64_t stride[2],
               const int64_t padding[2]);

// --- declared properties (builders_declare.cpp; engine/ir/properties.hpp) --------------
// Sorts each group's dims and checks them against shape (in range, distinct, equal sizes,
// groups disjoint; a Hermitian group is a pair of dims of a complex tensor).
void check_groups(const Shape& shape, std::vector<SymmetryGroup>& groups, DType dtype);
// Tile extents (one positive extent per dim) and a nonzero flag per tile of their grid.
void check_tiles(const Shape& shape, const std::vector<int64_t>& tiles, const std::vector<bool>& nonzero);
// x with the groups declared (and what x is known to keep); checked when evaluated unless
// trust, and not again where x is already known to have them.
NodeRef declare(const NodeRef& x, PropertiesAttrs p, bool trust);
NodeRef dense(const NodeRef& x);  // the same values, nothing declared
// a @ b over the nonzero tile pairs when a or b is a 2-D block-sparse declared tensor, else nullptr
// (builders_tile_matmul.cpp; matmul calls it).
NodeRef tile_matmul(const NodeRef& a, const NodeRef& b);
// x's upper triangle in g's two dims mirrored (antisymmetric: negated, diagonal 0;
// Hermitian: conjugated, diagonal its real part).
NodeRef mirror(const NodeRef& x, const SymmetryGroup& g);
// The conjugate of a Hermitian value's stored element where it is mirrored: re + i (0 - im),
// so a zero imaginary part stays +0, as x + conj(x^T) makes it when the two parts are equal
// (conj would give -0, which log, sqrt and pow on the negative real axis see).
NodeRef mirror_conj(const NodeRef& x);
// tp.rand / tp.randn of a complex dtype: the real and imaginary parts are the two elements of
// a real random tensor of shape {shape..., 2} (so keyed by the element index like every random
// tensor); randn's parts have variance 1/2 each (E|z|^2 = 1, as torch), rand's are in [0, 1).
NodeRef complex_random(bool normal, const Shape& shape, uint64_t seed, DType dtype);

// --- lines along one dim (builders_line.cpp): dim 0-based, x at least 1-D -------------
// Cumsum, Cumprod (ints and bools in i64), Cummax, Cummin (values), Logcumsumexp (floats);
// reverse runs from the end of the line (the gradients' adjoint scans).
NodeRef scan(Op op, const NodeRef& x, int dim, bool reverse = false);
std::vector<NodeRef> scan_extreme(Op op, const NodeRef& x, int dim);    // Cummax/Cummin: {values, indices}
std::vector<NodeRef> sort(const NodeRef& x, int dim, bool descending);  // stable: {values, indices}
std::vector<NodeRef> topk(const NodeRef& x, int64_t k, int dim, bool largest);  // sorted: {values, indices}
// out[.., idx[i], ..] += g[.., i, ..] along dim (idx 1-based i64, g's shape): sort's adjoint.
NodeRef line_scatter_add(const NodeRef& g, const NodeRef& idx, int dim);
// 1-based insertion points (i64, values' shape) of values into a 1-D ascending sequence.
NodeRef searchsorted(const NodeRef& sorted, const NodeRef& values, bool right);
// --- indexing (builders_index.cpp) -------------------------------------------------------
// torch's semantics with 1-based index values (negative from the end), checked when computed;
// index tensors are i32 or i64. fn names the user's function in the kernels' range errors.
// gather: out[..i..] = x[..index[..i..]..] along dim; index has x's rank, and no dim of it but
// dim is larger than x's. scatter (Op::Scatter or Op::ScatterAdd): x with src's elements put at
// (or added to) the positions index names along dim; src a tensor (at least index's shape, its
// corner used) or a number.
NodeRef gather(const NodeRef& x, int dim, const NodeRef& index, IndexFn fn = IndexFn::Gather);
NodeRef scatter(Op op, const NodeRef& x, int dim, const NodeRef& index, const Operand& src, IndexFn fn);
NodeRef index_select(const NodeRef& x, int dim, const NodeRef& index, IndexFn fn = IndexFn::IndexSelect);
NodeRef take(const NodeRef& x, const NodeRef& index, IndexFn fn = IndexFn::Take);  // flat x, index's shape
// x[{.., index, ..}]: dim replaced by index's dims (numpy's integer-array index on one dim).
NodeRef index_tensor(const NodeRef& x, int dim, const NodeRef& index, IndexFn fn = IndexFn::Subscript);
// The 1-based flat positions of mask's nonzero elements: {count} i64, count observed before.
NodeRef nonzero(const NodeRef& mask, int64_t count);
// 1-based flat positions into a tensor of `shape` -> one index tensor per dim (numpy.unravel_index).
std::vector<NodeRef> unravel(const NodeRef& flat, const Shape& shape);
// numpy's boolean index x[mask], mask the shape of x's leading dims: {count, x's other dims...}.
NodeRef masked_select(const NodeRef& x, const NodeRef& mask, int64_t count);
// x with value (a number, or a tensor broadcast to x) where mask is true: x[mask] = value.
NodeRef masked_fill(const NodeRef& x, const NodeRef& mask, const Operand& value);
// x with value (broadcast to x[mask]'s shape) put at mask's true elements in order.
NodeRef masked_scatter(const NodeRef& x, const NodeRef& mask, const NodeRef& value, int64_t count);
// x with the slices at index (1-D) along dim replaced by value (broadcast to them): x[{.., index, ..}] =
// value.
NodeRef index_put(const NodeRef& x, int dim, const NodeRef& index, const Operand& value);

// --- linear algebra (builders_linalg.cpp) ---------------------------------------------
// LAPACK on whole matrices, the last two dims, batched over the leading dims as numpy. Integer
// and bool inputs are computed in f64, as numpy. A factorization is one node whose last dim
// packs its parts; the parts returned are views of it, so it runs once.
NodeRef solve(const NodeRef& a, const NodeRef& b);  // b {n} or {..., n, k}
NodeRef cholesky(const NodeRef& a);                 // lower
NodeRef inv(const NodeRef& a);                      // solve(a, I)
NodeRef det(const NodeRef& a);
std::vector<NodeRef> slogdet(const NodeRef& a);             // {sign, log|det|}
std::vector<NodeRef> qr(const NodeRef& a, bool complete);   // {Q, R}
std::vector<NodeRef> svd(const NodeRef& a, int64_t mode);   // mode 0: {S}; 1, 2: {U, S, Vh}
std::vector<NodeRef> eigh(const NodeRef& a, bool vectors);  // {w} or {w, V}

// --- structure (builders_structure.cpp) ------------------------------------------------
// Compositions of slices (negative steps), reshapes and masked maps over an index comparison:
// no op of their own, so they shard through their parts' signatures.
NodeRef flip(const NodeRef& x, const std::vector<int>& dims);  // a slice with step -1
// numpy.diagonal: dims d1, d2 removed, the diagonal (j - i == offset) appended last.
NodeRef diagonal(const NodeRef& x, int64_t offset, int d1, int d2);
NodeRef diag(const NodeRef& x, int64_t k);  // 1-D: the matrix with x on diagonal k; 2-D: diagonal
NodeRef tril(const NodeRef& x, int64_t k);  // over the last two dims: keeps j - i <= k
NodeRef triu(const NodeRef& x, int64_t k);  // keeps j - i >= k
NodeRef trace(const NodeRef& x);            // sum of a matrix's diagonal
// numpy.meshgrid of 1-D tensors (expanded views); xy swaps the first two output dims.
std::vector<NodeRef> meshgrid(const std::vector<NodeRef>& xs, bool xy);
// Uniform integers lo..hi inclusive: floor(rand_f64 * (hi - lo + 1)) + lo, so Philox-keyed.
NodeRef randint(int64_t lo, int64_t hi, const Shape& shape, uint64_t seed, DType dtype);
NodeRef logspace(double a, double b, int64_t n, double base, DType dtype);  // base ^ linspace

// --- tp.fft (builders_fft.cpp): numpy.fft over the Fft line op --------------------------
// norm as numpy: "backward" (the inverse scaled by 1/n), "ortho" (both 1/sqrt(n)), "forward".
enum class FftNorm { Backward, Ortho, Forward };
// The DFT along dim (0-based) of x cut or zero-padded to n; real x becomes c64 (f32, f16, bf16)
// or c128 (f64, integers, bool), as numpy 2.
NodeRef fft(const NodeRef& x, int dim, std::optional<int64_t> n, FftNorm norm, bool inverse);
NodeRef rfft(const NodeRef& x, int dim, std::optional<int64_t> n, FftNorm norm);   // n/2+1 outputs
NodeRef irfft(const NodeRef& x, int dim, std::optional<int64_t> n, FftNorm norm);  // real, n = 2(m-1)
// The sample frequencies (f64): fftfreq, or rfftfreq's non-negative half when `half`.
NodeRef fftfreq(int64_t n, double d, bool half);
// numpy.fft.fftshift (or ifftshift when inverse) over dims (0-based).
NodeRef fftshift(const NodeRef& x, const std::vector<int>& dims, bool inverse);

}  // namespace tapestry::build
