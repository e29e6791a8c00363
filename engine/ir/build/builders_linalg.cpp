// Builders for the LAPACK ops: validate, broadcast the batch dims, and unpack factorizations.
//   NodeRef x = build::solve(a, b);                 // a {..., n, n}, b {n} or {..., n, k}
//   std::vector<NodeRef> usv = build::svd(a, 1);    // U, S, Vh: views of one Svd node
// Each op's output is {batch..., parts}: the parts of one matrix laid end to end, row-major.
#include <algorithm>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/empty.hpp"
#include "engine/ir/dtype_support.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

namespace {

// numpy computes integer and bool matrices in f64.
NodeRef as_float(const NodeRef& x) { return is_float(x->dtype) ? x : cast(x, DType::F64); }

NodeRef matrix_arg(const NodeRef& a, const char* name, bool square) {
  user_check(a->shape.size() >= 2, name, " must have at least 2 dims {..., m, n}, got ", shape_str(a->shape));
  const int64_t m = a->shape[a->shape.size() - 2], n = a->shape.back();
  user_check(!square || m == n, name, " must be square in its last two dims, got ", shape_str(a->shape));
  // numpy's linalg refuses float16 too; complex matrices have no LAPACK path here yet.
  user_check(!is_storage_or_complex(a->dtype), name, " is ", dtype_name(a->dtype),
             ": linalg takes f32 and f64 matrices (integers and bools are computed in f64)");
  return as_float(a);
}

Shape batch_of(const Shape& s, size_t matrix_dims) { return Shape(s.begin(), s.end() - matrix_dims); }

Shape with_tail(Shape batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

// The parts of a packed node: each a run of the last dim, reshaped to batch + its shape.
std::vector<NodeRef> unpack(const NodeRef& packed, const std::vector<Shape>& parts) {
  const Shape batch = batch_of(packed->shape, 1);
  const int last = static_cast<int>(packed->shape.size()) - 1;
  std::vector<NodeRef> out;
  int64_t at = 0;
  for (const Shape& p : parts) {
    int64_t len = 1;
    for (int64_t d : p) len *= d;
    Shape s = batch;
    s.insert(s.end(), p.begin(), p.end());
    out.push_back(reshape(narrow(packed, last, at, len), s));
    at += len;
  }
  internal_check(at == packed->shape.back());
  return out;
}

int64_t total(const std::vector<Shape>& parts) {
  int64_t n = 0;
  for (const Shape& p : parts) {
    int64_t len = 1;
    for (int64_t d : p) len *= d;
    n += len;
  }
  return n;
}

// A one-input factorization with its parts packed: {batch..., sum of the parts' sizes}.
std::vector<NodeRef> factor(Op op, const NodeRef& a, int64_t mode, const std::vector<Shape>& parts) {
  const Shape shape = with_tail(batch_of(a->shape, 2), {total(parts)});
  check_shape(shape, "result");
  const Attrs attrs = op == Op::Slogdet ? Attrs{} : LinalgAttrs{mode}.encode();
  return unpack(op_node(op, {a}, attrs, shape, a->dtype), parts);
}

}  // namespace

NodeRef solve(const NodeRef& a0, const NodeRef& b0) {
  const NodeRef a = matrix_arg(a0, "a", true);
  const int64_t n = a->shape.back();
  const DType t = promote(a->dtype, as_float(b0)->dtype);
  user_check(b0->shape.size() >= 1, "b must have at least 1 dim, got a scalar");
  const bool vector = b0->shape.size() == 1;  // numpy 2: only a 1-D b is a vector
  NodeRef b = vector ? unsqueeze(b0, 1) : b0;
  user_check(b->shape[b->shape.size() - 2] == n, "b must have ", n, " rows to match a ", shape_str(a0->shape),
             ", got ", shape_str(b0->shape));
  // Batch dims broadcast as numpy's; a vector b is shared by every matrix of a.
  const Shape ab = batch_of(a->shape, 2), bb = batch_of(b->shape, 2);
  Shape batch(std::max(ab.size(), bb.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t x = i + ab.size() >= batch.size() ? ab[i + ab.size() - batch.size()] : 1;
    const int64_t y = i + bb.size() >= batch.size() ? bb[i + bb.size() - batch.size()] : 1;
    user_check(x == y || x == 1 || y == 1, "batch dims of a ", shape_str(a0->shape), " and b ",
               shape_str(b0->shape), " do not broadcast");
    batch[i] = std::max(x, y);
  }
  const int64_t k = b->shape.back();
  const NodeRef x = op_node(Op::Solve,
                            {broadcast_to(cast(a, t), with_tail(batch, {n, n})),
                             broadcast_to(cast(b, t), with_tail(batch, {n, k}))},
                            Attrs{}, with_tail(batch, {n, k}), t);
  return vector ? squeeze(x, static_cast<int>(batch.size()) + 1) : x;
}

NodeRef cholesky(const NodeRef& a0) {
  const NodeRef a = matrix_arg(a0, "a", true);
  return op_node(Op::Cholesky, {a}, Attrs{}, a->shape, a->dtype);
}

NodeRef inv(const NodeRef& a0) {
  const NodeRef a = matrix_arg(a0, "a", true);
  const int64_t n = a->shape.back();
  return solve(a, broadcast_to(eye(n, n, a->dtype), a->shape));
}

NodeRef det(const NodeRef& a0) {
  const NodeRef a = matrix_arg(a0, "a", true);
  if (a->shape.back() == 0) return full(batch_of(a->shape, 2), 1, a->dtype);  // a 0x0 matrix: 1, as numpy
  return op_node(Op::Det, {a}, Attrs{}, batch_of(a->shape, 2), a->dtype);
}

std::vector<NodeRef> slogdet(const NodeRef& a0) {
  const NodeRef a = matrix_arg(a0, "a", true);
  if (a->shape.back() == 0) {  // a 0x0 matrix: det 1, as numpy
    const Shape batch = batch_of(a->shape, 2);
    return {full(batch, 1, a->dtype), full(batch, 0, a->dtype)};
  }
  return factor(Op::Slogdet, a, 0, {Shape{}, Shape{}});
}

std::vector<NodeRef> qr(const NodeRef& a0, bool complete) {
  const NodeRef a = matrix_arg(a0, "a", false);
  const int64_t m = a->shape[a->shape.size() - 2], n = a->shape.back(), k = complete ? m : std::min(m, n);
  if (complete && n == 0 && m > 0) {  // numpy: Q is the identity, R {m, 0}
    const Shape batch = batch_of(a->shape, 2);
    return {broadcast_to(eye(m, m, a->dtype), with_tail(batch, {m, m})),
            full(with_tail(batch, {m, 0}), 0, a->dtype)};
  }
  return factor(Op::Qr, a, complete ? 1 : 0, {Shape{m, k}, Shape{k, n}});
}

std::vector<NodeRef> svd(const NodeRef& a0, int64_t mode) {
  internal_check(mode >= 0 && mode <= 2);
  const NodeRef a = matrix_arg(a0, "a", false);
  const int64_t m = a->shape[a->shape.size() - 2], n = a->shape.back(), k = std::min(m, n);
  if (mode == 0) return factor(Op::Svd, a, 0, {Shape{k}});
  const int64_t u = mode == 2 ? m : k, v = mode == 2 ? n : k;
  if (mode == 2 && k == 0 && m + n > 0) {  // numpy: identities around no singular value
    const Shape batch = batch_of(a->shape, 2);
    return {broadcast_to(eye(m, m, a->dtype), with_tail(batch, {m, m})),
            full(with_tail(batch, {0}), 0, a->dtype),
            broadcast_to(eye(n, n, a->dtype), with_tail(batch, {n, n}))};
  }
  return factor(Op::Svd, a, mode, {Shape{m, u}, Shape{k}, Shape{v, n}});
}

std::vector<NodeRef> eigh(const NodeRef& a0, bool vectors) {
  const NodeRef a = matrix_arg(a0, "a", true);
  const int64_t n = a->shape.back();
  if (!vectors) return factor(Op::Eigh, a, 0, {Shape{n}});
  return factor(Op::Eigh, a, 1, {Shape{n}, Shape{n, n}});
}

}  // namespace tapestry::build
