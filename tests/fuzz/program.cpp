#include "tests/fuzz/program.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

#include "engine/ir/error.hpp"

namespace tapestry::fuzz {

namespace {

using Rng = std::mt19937_64;

// An empty range (from a size-0 dim) draws lo: the builders then refuse what it was for.
int64_t uni(Rng& r, int64_t lo, int64_t hi) {
  return hi < lo ? lo : std::uniform_int_distribution<int64_t>(lo, hi)(r);
}
bool coin(Rng& r, double p = 0.5) { return std::uniform_real_distribution<double>(0, 1)(r) < p; }
template <class T> const T& pick(Rng& r, const std::vector<T>& v) { return v[uni(r, 0, v.size() - 1)]; }

// Sizes: 1 and primes often (uneven blocks on every mesh), small composites too.
int64_t size(Rng& r, int64_t max_dim) {
  static const std::vector<int64_t> sizes{1, 1, 2, 3, 5, 7, 11, 13, 4, 6, 8, 9, 10, 12};
  for (;;) {
    const int64_t s = pick(r, sizes);
    if (s <= max_dim) return s;
  }
}

Shape random_shape(Rng& r, const GenOptions& o, int rank) {
  Shape s;
  for (int d = 0; d < rank; ++d) s.push_back(size(r, o.max_dim));
  while (numel(s) > 1500) s[uni(r, 0, s.size() - 1)] = 1;
  // Now and then an empty tensor (a size-0 dim): what it feeds must fold to numpy's results.
  if (rank > 0 && coin(r, 0.04)) s[uni(r, 0, rank - 1)] = 0;
  return s;
}

// Mostly the five original dtypes; one draw in eight is one of i8, u8, f16, bf16, c64, c128.
DType random_dtype(Rng& r) {
  if (coin(r, 0.125)) {
    constexpr DType kNew[] = {DType::I8, DType::U8, DType::F16, DType::BF16, DType::C64, DType::C128};
    return kNew[uni(r, 0, 5)];
  }
  const int k = static_cast<int>(uni(r, 0, 9));
  return k < 5 ? DType::F32 : k < 7 ? DType::F64 : k < 8 ? DType::I32 : k < 9 ? DType::I64 : DType::Bool;
}

const std::vector<Op> kUnary{Op::Neg,   Op::Abs,    Op::Exp,        Op::Log,       Op::Sqrt,
                             Op::Rsqrt, Op::Sin,    Op::Cos,        Op::Tanh,      Op::Sigmoid,
                             Op::Relu,  Op::Gelu,   Op::Floor,      Op::Ceil,      Op::Round,
                             Op::Sign,  Op::Square, Op::Reciprocal, Op::LogicalNot};
const std::vector<Op> kBinary{Op::Add, Op::Sub,     Op::Mul,     Op::Div,   Op::FloorDiv,   Op::Mod,
                              Op::Pow, Op::Maximum, Op::Minimum, Op::Atan2, Op::Eq,         Op::Ne,
                              Op::Lt,  Op::Le,      Op::Gt,      Op::Ge,    Op::LogicalAnd, Op::LogicalOr};
const std::vector<Op> kReduce{Op::Sum, Op::Prod, Op::Max, Op::Min, Op::All, Op::Any};

// Ops whose result jumps when their input moves by a rounding error: never fed a value that
// a split float reduction computed (the sharded result may differ in the last bit).
bool discontinuous(const Step& s) {
  switch (s.kind) {
    case Kind::Unary:
      return s.op == Op::Floor || s.op == Op::Ceil || s.op == Op::Round || s.op == Op::Sign ||
             s.op == Op::LogicalNot;
    case Kind::Binary:
    case Kind::BinaryScalar:
      return s.op == Op::FloorDiv || s.op == Op::Mod || (s.op >= Op::Eq && s.op <= Op::LogicalOr);
    case Kind::Where:
    case Kind::ArgReduce: return true;
    case Kind::Cast: return !is_float(s.dt);
    case Kind::Reduce: return s.op == Op::All || s.op == Op::Any;
    case Kind::Line:  // indices (argsort, cummax's) jump
      return s.flag && (s.op == Op::Sort || s.op == Op::Cummax || s.op == Op::Cummin);
    default: return false;
  }
}

// Ops that turn the sign of a zero into a different value (1/+0 = inf, 1/-0 = -inf; atan2(+0,
// -1) = pi, atan2(-0, -1) = -pi; a complex log or sqrt across its branch cut; a zero divisor
// or a zero raised to a negative power). A declared zero tile is +0 where the dense program's
// product with a negative is -0 (docs/properties.md: "values are taken finite"), and a
// Hermitian mirror's zero imaginary part is +0 where x + conj(x^T) may make it -0, so values
// downstream of those declarations are never fed to them (seed 47 graph 6832, seed 52 graph
// 2797).
bool zero_sign_shows(const Step& s) {
  if (s.kind == Kind::Unary)
    return s.op == Op::Reciprocal || s.op == Op::Rsqrt || s.op == Op::Log || s.op == Op::Sqrt;
  if (s.kind == Kind::Binary || s.kind == Kind::BinaryScalar)
    return s.op == Op::Div || s.op == Op::FloorDiv || s.op == Op::Mod || s.op == Op::Atan2 || s.op == Op::Pow;
  return false;
}

Shape factor_into(Rng& r, int64_t n) {
  std::vector<int64_t> f;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) f.push_back(p), n /= p;
  if (n > 1) f.push_back(n);
  std::shuffle(f.begin(), f.end(), r);
  const int rank = static_cast<int>(uni(r, 1, 4));
  Shape s(rank, 1);
  for (int64_t p : f) s[uni(r, 0, rank - 1)] *= p;
  return s;
}

class Gen {
 public:
  Gen(Rng& r, const GenOptions& o) : r_(r), o_(o) {}

  Program run() {
    const int n_src = static_cast<int>(uni(r_, 1, 3));
    for (int i = 0; i < n_src || p_.steps.empty(); ++i) add_leaf();
    const int target = static_cast<int>(uni(r_, 2, o_.max_steps));
    for (int tries = 0; static_cast<int>(p_.steps.size()) < target && tries < 200; ++tries) try_step();
    // Roots: the last step and one or two others, distinct.
    std::set<int> roots{static_cast<int>(p_.steps.size()) - 1};
    const int extra = static_cast<int>(uni(r_, 0, 2));
    for (int i = 0; i < extra; ++i) {
      const int r = static_cast<int>(uni(r_, 0, p_.steps.size() - 1));
      if (p_.steps[r].kind != Kind::Src) roots.insert(r);  // a source root runs nothing
    }
    p_.roots.assign(roots.begin(), roots.end());
    return p_;
  }

 private:
  Rng& r_;
  const GenOptions& o_;
  Program p_;
  std::vector<NodeRef> nodes_;
  std::vector<bool> inexact_;
  std::vector<bool> structural_zeros_;  // downstream of a block-sparse or Hermitian declaration

  // Appends s if it builds; returns its index or -1.
  int push(Step s) {
    NodeRef n;
    try {
      n = build_one(s);
    } catch (const Error&) {
      return -1;
    }
    if (numel(n->shape) > 4000) return -1;
    bool inexact = reorders(s, n->dtype);
    bool zeros = s.kind == Kind::Declare && (s.n == 1 || s.n == 2);  // block-sparse, Hermitian
    for (int i : s.in) {
      if (inexact_[i] && discontinuous(s)) return -1;
      if (structural_zeros_[i] && zero_sign_shows(s)) return -1;
      inexact = inexact || (inexact_[i] && is_inexact(n->dtype));
      zeros = zeros || structural_zeros_[i];
    }
    p_.steps.push_back(std::move(s));
    nodes_.push_back(n);
    inexact_.push_back(inexact);
    structural_zeros_.push_back(zeros);
    return static_cast<int>(p_.steps.size()) - 1;
  }

  NodeRef build_one(const Step& s) {
    // Rebuilding everything would be quadratic; build just this step over the built nodes.
    std::vector<NodeRef> ins;
    for (int i : s.in) ins.push_back(nodes_[i]);
    return build_step(s, ins);
  }

  int src(const Shape& shape, DType dt) {
    Step s;
    s.kind = Kind::Src;
    s.a = shape;
    s.dt = dt;
    s.n = uni(r_, 0, 999);
    return push(s);
  }

  int add_leaf() {
    const int rank = static_cast<int>(uni(r_, 0, 12) == 0 ? 0 : uni(r_, 1, 3));
    Step s;
    s.a = random_shape(r_, o_, rank);
    s.dt = random_dtype(r_);
    const int k = static_cast<int>(uni(r_, 0, 9));
    if (k < 6 || rank == 0) return src(s.a, s.dt);
    if (k == 6) {
      s.kind = Kind::Full;
      s.v = is_float(s.dt) ? uni(r_, -8, 8) / 4.0 : static_cast<double>(uni(r_, -5, 5));
    } else if (k == 7) {
      s.kind = Kind::Arange;
      s.a = {uni(r_, -5, 5), 0, uni(r_, 1, 3)};
      s.a[1] = s.a[0] + s.a[2] * (size(r_, o_.max_dim) - 1);
    } else if (k == 8) {
      s.kind = Kind::Rand;
      s.n = uni(r_, 0, 99);
      s.dt = coin(r_) ? DType::F32 : DType::F64;
      s.flag = coin(r_);  // randn
    } else {
      s.kind = Kind::Eye;
      s.a = {size(r_, o_.max_dim), size(r_, o_.max_dim)};
    }
    return push(s);
  }

  // An operand from the pool, recent ones more often.
  int any() {
    const int n = static_cast<int>(p_.steps.size());
    return coin(r_, 0.6) ? static_cast<int>(uni(r_, std::max(0, n - 3), n - 1))
                         : static_cast<int>(uni(r_, 0, n - 1));
  }
  const Shape& shape(int i) const { return nodes_[i]->shape; }
  DType dtype(int i) const { return nodes_[i]->dtype; }

  // A step of the pool broadcastable with x, or a new source of such a shape.
  int partner(int x) {
    for (int t = 0; t < 4; ++t) {
      const int y = any();
      try {
        broadcast_shapes(shape(x), shape(y));
        return y;
      } catch (const Error&) {
      }
    }
    Shape s = shape(x);
    for (auto& d : s)
      if (coin(r_, 0.3)) d = 1;
    if (!s.empty() && coin(r_, 0.3)) s.erase(s.begin());
    return src(s, coin(r_, 0.7) ? dtype(x) : random_dtype(r_));
  }

  void try_step() {
    const int x = any();
    const Shape xs = shape(x);
    const int rank = static_cast<int>(xs.size());
    Step s;
    s.in = {x};
    const int k = static_cast<int>(uni(r_, 0, 29));  // 29: the default
    switch (k) {
      case 0: add_leaf(); return;
      case 1:
      case 2:
      case 3:
        s.kind = Kind::Unary;
        s.op = pick(r_, kUnary);
        break;
      case 4:
      case 5:
      case 6:
        s.kind = Kind::Binary;
        s.op = pick(r_, kBinary);
        s.in.push_back(partner(x));
        if (s.in[1] < 0) return;
        if (coin(r_, 0.2)) std::swap(s.in[0], s.in[1]);
        break;
      case 7:
        s.kind = Kind::BinaryScalar;
        s.op = pick(r_, kBinary);
        s.v = uni(r_, -8, 8) / 4.0;
        break;
      case 8: {
        s.kind = Kind::Where;
        const int c = src(xs, DType::Bool);
        const int b = partner(x);
        if (c < 0 || b < 0) return;
        s.in = {c, x, b};
        break;
      }
      case 9:
        s.kind = Kind::Cast;
        s.dt = random_dtype(r_);
        break;
      case 10:
      case 11: {
        s.kind = coin(r_, 0.8) ? Kind::Reduce : Kind::Mean;
        s.op = pick(r_, kReduce);
        for (int d = 0; d < rank; ++d)
          if (coin(r_, 0.4)) s.a.push_back(d);
        s.flag = coin(r_);
        break;
      }
      case 12:
        s.kind = Kind::ArgReduce;
        s.op = coin(r_) ? Op::ArgMax : Op::ArgMin;
        s.flag = coin(r_);
        s.n = rank > 0 && coin(r_, 0.8) ? uni(r_, 0, rank - 1) : -1;
        break;
      case 13: {
        s.kind = Kind::Matmul;
        if (rank == 0) return;
        Shape b;
        const int64_t k_ = xs.back();
        const int form = static_cast<int>(uni(r_, 0, 2));
        if (form == 0) b = {k_};
        else if (form == 1) b = {k_, size(r_, o_.max_dim)};
        else {
          b = xs;
          if (rank >= 2) b[rank - 2] = k_;
          b.back() = size(r_, o_.max_dim);
          if (rank == 1) b = {k_, b.back()};
        }
        const int y = src(b, dtype(x));
        if (y < 0) return;
        s.in.push_back(y);
        break;
      }
      case 14: {
        s.kind = Kind::Einsum;
        struct T {
          int rank;
          const char* spec;
          int second;
        };  // second: 0 none, 1 {j,K}, 2 same, 3 {K}, 4 batch
        static const std::vector<T> ts{{2, "ij,jk->ik", 1}, {2, "ij->ji", 0},       {2, "ii->i", 0},
                                       {2, "ij->", 0},      {3, "ijk->ki", 0},      {2, "ij,ij->i", 2},
                                       {1, "i,j->ij", 3},   {3, "bij,bjk->bik", 4}, {2, "ij,j->i", 5}};
        const T& t = pick(r_, ts);
        if (t.rank != rank) return;
        s.spec = t.spec;
        Shape b;
        if (t.second == 1) b = {xs[1], size(r_, o_.max_dim)};
        else if (t.second == 2) b = xs;
        else if (t.second == 3) b = {size(r_, o_.max_dim)};
        else if (t.second == 4) b = {xs[0], xs[2], size(r_, o_.max_dim)};
        else if (t.second == 5) b = {xs[1]};
        if (!b.empty()) {
          const int y = src(b, dtype(x));
          if (y < 0) return;
          s.in.push_back(y);
        }
        break;
      }
      case 15:
        s.kind = Kind::Reshape;
        s.a = factor_into(r_, numel(xs));
        break;
      case 16: {
        s.kind = Kind::Permute;
        std::vector<int64_t> perm(rank);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), r_);
        s.a = perm;
        break;
      }
      case 17: {
        s.kind = Kind::Expand;
        s.a = xs;
        for (auto& d : s.a)
          if (d == 1) d = size(r_, o_.max_dim);
        if (coin(r_, 0.4)) s.a.insert(s.a.begin(), size(r_, 5));
        break;
      }
      case 18:
      case 19: {
        s.kind = Kind::Slice;
        for (int d = 0; d < rank; ++d) {
          const int64_t start = uni(r_, 0, xs[d] - 1);
          const int64_t step = uni(r_, 1, 3);
          s.a.push_back(start);
          s.b.push_back(step);
          s.c.push_back(uni(r_, 1, (xs[d] - 1 - start) / step + 1));
        }
        break;
      }
      case 20: {
        if (rank == 0) return;
        s.kind = coin(r_) ? Kind::Narrow : Kind::Select;
        s.n = uni(r_, 0, rank - 1);
        s.a = {uni(r_, 0, xs[s.n] - 1)};
        if (s.kind == Kind::Narrow) s.a.push_back(uni(r_, 1, xs[s.n] - s.a[0]));
        break;
      }
      case 21: {
        if (rank == 0) return;
        s.kind = Kind::Cat;
        s.n = uni(r_, 0, rank - 1);
        const int parts = static_cast<int>(uni(r_, 1, 2));
        for (int i = 0; i < parts; ++i) {
          Shape o = xs;
          o[s.n] = size(r_, o_.max_dim);
          const int y = coin(r_, 0.3) ? x : src(o, coin(r_, 0.8) ? dtype(x) : random_dtype(r_));
          if (y < 0) return;
          s.in.push_back(y);
        }
        break;
      }
      case 22: {
        s.kind = Kind::Pad;
        for (int d = 0; d < rank; ++d) s.a.push_back(uni(r_, 0, 2)), s.b.push_back(uni(r_, 0, 2));
        s.n = uni(r_, 0, 2);  // constant, reflect, periodic
        s.v = uni(r_, -4, 4) / 2.0;
        break;
      }
      case 23:
        s.kind = Kind::Roll;
        s.v = static_cast<double>(uni(r_, -15, 15));
        s.n = rank > 0 && coin(r_, 0.7) ? uni(r_, 0, rank - 1) : -1;
        break;
      case 24: {
        if (rank == 0) return;
        s.kind = Kind::Stencil;
        Shape ks;
        for (int d = 0; d < rank; ++d) ks.push_back(pick(r_, std::vector<int64_t>{1, 3, 5}));
        const int w = src(ks, dtype(x));
        if (w < 0) return;
        s.in.push_back(w);
        s.n = uni(r_, 0, 2);  // zero, periodic, reflect
        break;
      }
      case 25: {
        s.kind = Kind::Conv2d;
        const int64_t g = coin(r_, 0.3) ? 2 : 1;
        const int64_t c = g * uni(r_, 1, 2), kh = uni(r_, 1, 3), kw = uni(r_, 1, 3);
        const DType dt = coin(r_, 0.8) ? DType::F32 : DType::I64;
        const int xi = src({uni(r_, 1, 2), c, uni(r_, kh, 9), uni(r_, kw, 9)}, dt);
        const int wi = src({g * uni(r_, 1, 2), c / g, kh, kw}, dt);
        if (xi < 0 || wi < 0) return;
        s.in = {xi, wi};
        s.c = {uni(r_, 1, 2),
               uni(r_, 1, 2),
               uni(r_, 0, kh / 2),
               uni(r_, 0, kw / 2),
               uni(r_, 1, 2),
               uni(r_, 1, 2),
               g};
        break;
      }
      case 26: {
        s.kind = Kind::Pool;
        s.op = coin(r_) ? Op::MaxPool2d : Op::AvgPool2d;
        int in = x;
        if (rank != 4)
          in = src({uni(r_, 1, 2), uni(r_, 1, 3), uni(r_, 3, 9), uni(r_, 3, 9)},
                   coin(r_, 0.8) ? DType::F32 : DType::I32);
        if (in < 0) return;
        s.in = {in};
        const int64_t kh = uni(r_, 1, 3), kw = uni(r_, 1, 3);
        s.c = {kh, kw, uni(r_, 1, 3), uni(r_, 1, 3), uni(r_, 0, kh / 2), uni(r_, 0, kw / 2)};
        break;
      }
      case 27: {
        static const std::vector<Op> kLine{Op::Sort,   Op::Cumsum, Op::Cumprod,     Op::Cummax,
                                           Op::Cummin, Op::Fft,    Op::Logcumsumexp};
        if (rank == 0) return;
        s.kind = Kind::Line;
        s.op = pick(r_, kLine);
        if (s.op == Op::Cumprod && !is_float(dtype(x))) return;  // i64 products of a long line overflow
        s.n = uni(r_, 0, rank - 1);
        s.a = {coin(r_) ? 1 : 0};
        if (s.op == Op::Fft && !is_complex(dtype(x)) && coin(r_, 0.4)) s.a = {2};      // rfft: r2c
        else if (s.op == Op::Fft && is_inexact(dtype(x)) && coin(r_, 0.3)) s.a = {3};  // irfft: c2r
        // topk as each of 2..4 chunks' k best then the best of those (build::topk_chunked, what
        // tp.topk runs on long lines over several ranks): a[0] largest, a[1] k, a[2] chunks.
        if (s.op == Op::Sort && xs[s.n] >= 1 && coin(r_, 0.3))
          s.a = {s.a[0], uni(r_, 1, xs[s.n]), uni(r_, 2, 4)};
        s.flag = coin(r_, 0.3);
        break;
      }
      case 28: {  // index values drawn valid (a fifth negative): the ops, not range errors, are fuzzed
        if (rank == 0) return;
        s.kind = Kind::Index;
        s.op = pick(r_, std::vector<Op>{Op::Gather, Op::Scatter, Op::ScatterAdd});
        s.n = uni(r_, 0, rank - 1);
        for (int d = 0; d < rank; ++d) s.a.push_back(uni(r_, 1, xs[d]));  // no larger than x
        if (s.op == Op::Gather) s.a[s.n] = uni(r_, 1, 6);
        for (int64_t i = 0; i < numel(s.a); ++i) {
          const int64_t p = uni(r_, 1, xs[s.n]);
          s.b.push_back(coin(r_, 0.2) ? p - xs[s.n] - 1 : p);
        }
        if (s.op != Op::Gather) {
          if (s.op == Op::ScatterAdd && dtype(x) == DType::Bool) return;
          const int y = src(s.a, dtype(x));
          if (y < 0) return;
          s.in.push_back(y);
        }
        break;
      }
      default: {
        if (rank >= 1 && dtype(x) != DType::Bool && coin(r_, 0.25)) {  // block-sparse
          s.kind = Kind::Declare;
          s.n = 1;
          int64_t tiles = 1;
          for (int d = 0; d < rank; ++d) {
            s.a.push_back(uni(r_, 1, xs[d]));
            tiles *= (xs[d] + s.a[d] - 1) / s.a[d];
          }
          if (tiles > 64) return;
          for (int64_t t = 0; t < tiles; ++t) s.b.push_back(coin(r_, 0.4) ? 1 : 0);
        } else if (rank >= 2 && dtype(x) != DType::Bool && coin(r_, 0.5)) {
          s.kind = Kind::Declare;
          const int d1 = static_cast<int>(uni(r_, 0, rank - 2)),
                    d2 = static_cast<int>(uni(r_, d1 + 1, rank - 1));
          // s.n = 2: a Hermitian pair, x + conj(x^T), of x when complex, else of a complex source
          // (complex tensors of two or more dims are rare among the draws).
          const bool herm = coin(r_, is_complex(dtype(x)) ? 0.6 : 0.4);
          DType dt = dtype(x);
          if (herm && !is_complex(dt)) dt = coin(r_) ? DType::C64 : DType::C128;
          if (xs[d1] != xs[d2] || xs[d1] < 2 || dt != dtype(x)) {  // a source of x's shape, those dims equal
            Shape t = xs;
            t[d1] = t[d2] = std::max<int64_t>(2, std::min(xs[d1], xs[d2]));
            const int y = src(t, dt);
            if (y < 0) return;
            s.in = {y};
          }
          s.a = {d1, d2};
          s.flag = !herm && coin(r_);
          if (herm) s.n = 2;
        } else if (coin(r_)) {
          s.kind = Kind::Constrain;
          for (int d = 0; d < rank; ++d) s.a.push_back(uni(r_, 1, std::min<int64_t>(xs[d], 4)));
          // A copy on every rank (x:constrain(tp.replicated())): data parallelism's weights.
          if (coin(r_, 0.25)) {
            s.flag = true;
            std::fill(s.a.begin(), s.a.end(), 1);
          }
        } else {
          if (rank == 0) return;
          s.kind = Kind::WriteRegion;
          for (int d = 0; d < rank; ++d) {
            s.a.push_back(uni(r_, 0, xs[d] - 1));
            s.b.push_back(uni(r_, 1, xs[d] - s.a[d]));
          }
          if (coin(r_)) {
            s.v = uni(r_, -8, 8) / 4.0;
            s.flag = true;  // a number
          } else {
            const int y = src(s.b, coin(r_, 0.7) ? dtype(x) : random_dtype(r_));
            if (y < 0) return;
            s.in.push_back(y);
          }
        }
      }
    }
    push(s);
  }
};

}  // namespace

// (program.hpp) Discontinuous ops are never fed such a result.
bool reorders(const Step& s, DType out) {
  if (!is_inexact(out)) return false;
  switch (s.kind) {
    // FFTW's codelets may follow a block's alignment; a long line on a mesh is scanned in chunks
    // with carries (engine/plan/split_scan.hpp).
    case Kind::Line:
      return s.op == Op::Fft || s.op == Op::Cumsum || s.op == Op::Cumprod || s.op == Op::Logcumsumexp;
    case Kind::Reduce: return s.op == Op::Sum || s.op == Op::Prod;
    case Kind::Mean:
    case Kind::Matmul:
    case Kind::Einsum:
    case Kind::Stencil:
    case Kind::Conv2d: return true;
    case Kind::Pool: return s.op == Op::AvgPool2d;
    default: return false;
  }
}

Program generate(std::mt19937_64& rng, const GenOptions& o) { return Gen(rng, o).run(); }

Program prune(const Program& p) {
  std::vector<bool> live(p.steps.size(), false);
  for (int r : p.roots) live[r] = true;
  for (int i = static_cast<int>(p.steps.size()) - 1; i >= 0; --i)
    if (live[i])
      for (int j : p.steps[i].in) live[j] = true;
  std::vector<int> renum(p.steps.size(), -1);
  Program q;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (!live[i]) continue;
    Step s = p.steps[i];
    for (int& j : s.in) j = renum[j];
    renum[i] = static_cast<int>(q.steps.size());
    q.steps.push_back(std::move(s));
  }
  for (int r : p.roots) q.roots.push_back(renum[r]);
  return q;
}

const char* kind_name(Kind k) {
  static const char* names[] = {
      "src",     "full",   "arange", "rand",      "eye",          "unary",  "binary", "binary_scalar",
      "where",   "cast",   "reduce", "mean",      "argreduce",    "matmul", "einsum", "reshape",
      "permute", "expand", "slice",  "narrow",    "select",       "cat",    "pad",    "roll",
      "stencil", "conv2d", "pool",   "constrain", "write_region", "line",   "index",  "declare"};
  return names[static_cast<int>(k)];
}

}  // namespace tapestry::fuzz
