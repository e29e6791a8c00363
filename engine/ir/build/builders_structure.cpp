// Structure: flip, diagonal, diag, tril, triu, trace, meshgrid, randint and logspace, all
// composed of existing ops (slices with negative steps, reshapes, index comparisons and maps),
// so they have affine signatures and shard like their parts.
#include <algorithm>
#include <cmath>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

namespace {

// cols - rows over an {n, m} grid, as i64: the diagonal offset of every element.
NodeRef offset_grid(int64_t n, int64_t m) {
  const NodeRef rows = reshape(arange_int(0, n - 1, 1, DType::I64), {n, 1});
  const NodeRef cols = reshape(arange_int(0, m - 1, 1, DType::I64), {1, m});
  return binary(Op::Sub, cols, rows);
}

NodeRef zero_of(DType t) { return full_int({}, 0, t); }

NodeRef triangle(const NodeRef& x, int64_t k, Op keep) {
  const int r = static_cast<int>(x->shape.size());
  user_check(r >= 2, "x needs at least 2 dims, got shape ", shape_str(x->shape));
  const NodeRef mask =
      binary(keep, offset_grid(x->shape[r - 2], x->shape[r - 1]), Operand::integer_number(k));
  return where(mask, x, zero_of(x->dtype));
}

}  // namespace

NodeRef flip(const NodeRef& x, const std::vector<int>& dims) {
  const size_t r = x->shape.size();
  std::vector<int64_t> start(r, 0), step(r, 1);
  for (int d : dims) {
    internal_check(d >= 0 && d < static_cast<int>(r));
    user_check(step[d] == 1, "dim ", d + 1, " is given twice");
    start[d] = x->shape[d] - 1;
    step[d] = -1;
  }
  return slice(x, start, step, x->shape);
}

NodeRef diagonal(const NodeRef& x, int64_t offset, int d1, int d2) {
  const int r = static_cast<int>(x->shape.size());
  user_check(r >= 2, "needs at least 2 dims, got shape ", shape_str(x->shape));
  internal_check(d1 >= 0 && d1 < r && d2 >= 0 && d2 < r);
  user_check(d1 != d2, "dim1 and dim2 are both ", d1 + 1);
  const int64_t n = x->shape[d1], m = x->shape[d2];
  const int64_t row = std::max<int64_t>(0, -offset), col = std::max<int64_t>(0, offset);
  // An offset past the corner leaves an empty diagonal, as numpy.
  const int64_t len = std::max<int64_t>(0, std::min(n - row, m - col));
  // Move d1, d2 last, merge them, and take every (m+1)-th element from (row, col).
  std::vector<int> perm;
  for (int d = 0; d < r; ++d)
    if (d != d1 && d != d2) perm.push_back(d);
  perm.push_back(d1);
  perm.push_back(d2);
  Shape flat;
  for (int i = 0; i < r - 2; ++i) flat.push_back(x->shape[perm[i]]);
  flat.push_back(n * m);
  const NodeRef f = reshape(permute(x, perm), flat);
  std::vector<int64_t> start(r - 1, 0), step(r - 1, 1);
  Shape count = flat;
  start[r - 2] = row * m + col;
  step[r - 2] = m + 1;
  count[r - 2] = len;
  return slice(f, start, step, count);
}

NodeRef diag(const NodeRef& x, int64_t k) {
  if (x->shape.size() == 2) return diagonal(x, k, 0, 1);
  user_check(x->shape.size() == 1, "x must be 1-D (build a matrix) or 2-D (take a diagonal), got shape ",
             shape_str(x->shape));
  // out[i][j] = x[min(i, j)] where j - i == k, over x padded to n + |k|.
  const int64_t n = x->shape[0], a = k < 0 ? -k : k, size = n + a;
  const NodeRef xp = a == 0 ? x : pad(x, {0}, {a}, PadMode::Constant, 0.0);
  const NodeRef along = k >= 0 ? reshape(xp, {size, 1}) : reshape(xp, {1, size});
  const NodeRef mask = binary(Op::Eq, offset_grid(size, size), Operand::integer_number(k));
  return where(mask, along, zero_of(x->dtype));
}

NodeRef tril(const NodeRef& x, int64_t k) { return triangle(x, k, Op::Le); }
NodeRef triu(const NodeRef& x, int64_t k) { return triangle(x, k, Op::Ge); }

NodeRef trace(const NodeRef& x) {
  user_check(x->shape.size() == 2, "x must be a matrix, got shape ", shape_str(x->shape));
  return reduce(Op::Sum, diagonal(x, 0, 0, 1), {}, false);
}

std::vector<NodeRef> meshgrid(const std::vector<NodeRef>& xs, bool xy) {
  const size_t k = xs.size();
  Shape shape;
  for (size_t i = 0; i < k; ++i) {
    user_check(xs[i]->shape.size() == 1, "tensor ", i + 1, " must be 1-D, got shape ",
               shape_str(xs[i]->shape));
    shape.push_back(xs[i]->shape[0]);
  }
  // "xy" (numpy's default): the first two outputs dims are swapped, as for x, y of a plot.
  if (xy && k >= 2) std::swap(shape[0], shape[1]);
  std::vector<NodeRef> out;
  for (size_t i = 0; i < k; ++i) {
    const size_t at = xy && k >= 2 && i < 2 ? 1 - i : i;
    Shape one(k, 1);
    one[at] = shape[at];
    out.push_back(expand(reshape(xs[i], one), shape));
  }
  return out;
}

NodeRef randint(int64_t lo, int64_t hi, const Shape& shape, uint64_t seed, DType dtype) {
  user_check(is_int(dtype), "dtype must be an integer type, got ", dtype_name(dtype));
  user_check(lo <= hi, "lo (", lo, ") is greater than hi (", hi, ")");
  const double span = static_cast<double>(hi) - static_cast<double>(lo) + 1;
  user_check(span <= 9007199254740992.0, "the range ", lo, "..", hi, " has more than 2^53 values");
  // floor(u * span) with u uniform in [0, 1) from f64 rand (53 random bits): 0 .. span-1.
  const NodeRef u = rand(shape, seed, DType::F64);
  const NodeRef k = cast(unary(Op::Floor, binary(Op::Mul, u, Operand::number(span))), DType::I64);
  return cast(binary(Op::Add, k, Operand::integer_number(lo)), dtype);
}

NodeRef logspace(double a, double b, int64_t n, double base, DType dtype) {
  user_check(is_float(dtype), "dtype must be f32 or f64 (or f16, bf16), got ", dtype_name(dtype));
  return cast(binary(Op::Pow, Operand::number(base), linspace(a, b, n, DType::F64)), dtype);
}

}  // namespace tapestry::build
