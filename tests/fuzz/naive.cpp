#include "tests/fuzz/naive.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::fuzz {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

// Expected values, with `care` false where the value is not pinned down (int division by
// zero, NaN into a non-propagating op, overflow) and `slack` the absolute error allowed.
struct Want {
  std::vector<double> v;
  std::vector<bool> care;
  std::vector<double> slack;
  explicit Want(int64_t n) : v(n, 0), care(n, true), slack(n, 0) {}
};

double unary(Op op, double x) {
  switch (op) {
    case Op::Neg: return -x;
    case Op::Abs: return std::abs(x);
    case Op::Exp: return std::exp(x);
    case Op::Log: return std::log(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Rsqrt: return 1 / std::sqrt(x);
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::Tanh: return std::tanh(x);
    case Op::Sigmoid: return 1 / (1 + std::exp(-x));
    case Op::Relu: return x > 0 ? x : 0;
    case Op::Gelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Op::Floor: return std::floor(x);
    case Op::Ceil: return std::ceil(x);
    case Op::Round: return std::nearbyint(x);
    case Op::Sign: return std::isnan(x) ? x : (x > 0) - (x < 0);
    case Op::Square: return x * x;
    case Op::Reciprocal: return 1 / x;
    case Op::LogicalNot: return x == 0;
    default: return kNaN;
  }
}

// Python's float divmod (Objects/floatobject.c), which numpy and Lua follow: -1 // inf is -1.
std::pair<double, double> py_divmod(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  double fd;
  if (div != 0) {
    fd = std::floor(div);
    if (div - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, a / b);
  }
  return {fd, mod};
}

// care = false when the integer result is not defined by the docs.
double binary(Op op, double a, double b, bool ints, bool& care) {
  switch (op) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::FloorDiv:
      if (b == 0) return ints ? 0 : a / b;  // numpy: 1.0 // 0.0 is inf
      return py_divmod(a, b).first;
    case Op::Mod:
      if (b == 0) {
        care = false;
        return 0;
      }
      return py_divmod(a, b).second;
    case Op::Pow:
      if (ints) care = false;  // integer powers: overflow and negative exponents undocumented
      return std::pow(a, b);
    case Op::Maximum: return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
    case Op::Minimum: return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
    case Op::Atan2: return std::atan2(a, b);
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    case Op::LogicalAnd: return a != 0 && b != 0;
    case Op::LogicalOr: return a != 0 || b != 0;
    default: care = false; return 0;
  }
}

// x rounded to nearest even at `bits` significant bits, with subnormals below 2^emin and
// overflow to inf at `max_half` (halfway past the largest finite value): f16 and bf16, written
// here with frexp and rint, apart from engine/ir/half.hpp's bit arithmetic.
double round_small_float(double x, int bits, int emin, double max_half) {
  if (std::isnan(x) || std::isinf(x)) return x;
  if (std::abs(x) >= max_half) return std::copysign(INFINITY, x);
  int e = 0;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, std::max(e - 1, emin) - (bits - 1));
  return std::nearbyint(x / ulp) * ulp;
}

// The value a double becomes in dtype t (care false when it cannot be represented).
double to_dtype(double x, DType t, bool& care) {
  switch (t) {
    case DType::Bool: return x != 0;
    case DType::F32: return static_cast<float>(x);
    case DType::F64: return x;
    case DType::F16: return round_small_float(x, 11, -14, 65520.0);
    case DType::BF16: return round_small_float(x, 8, -126, std::ldexp(2.0 - std::ldexp(1.0, -8), 127));
    case DType::I8:
      if (!(x > -128.5 && x < 127.5)) care = false;  // wraps
      return std::trunc(x);
    case DType::U8:
      if (!(x > -0.5 && x < 255.5)) care = false;
      return std::trunc(x);
    case DType::C64:
    case DType::C128: care = false; return x;
    case DType::I32:
      if (!(std::abs(x) < 2147483647.0)) care = false;
      return std::trunc(x);
    case DType::I64:
      if (!(std::abs(x) < 9e15)) care = false;
      return std::trunc(x);
  }
  return x;
}

double rel_tol(DType t) {
  if (t == DType::F16 || t == DType::BF16) return t == DType::F16 ? 2e-3 : 1.6e-2;  // one ulp
  return t == DType::F32 ? 2e-5 : t == DType::F64 ? 1e-9 : 0;
}

}  // namespace

std::vector<double> to_doubles(const View& v) {
  const int64_t n = v.numel();
  const int per = is_complex(v.dtype) ? 2 : 1;  // complex: real and imaginary parts interleaved
  std::vector<double> out(static_cast<size_t>(n * per));
  dispatch_any_dtype(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<int64_t> idx = unravel(i, v.shape);
      int64_t off = 0;
      for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * v.strides[d];
      const T x = v.ptr<T>()[off];
      if constexpr (is_cx<T>) {
        out[2 * i] = x.re;
        out[2 * i + 1] = x.im;
      } else {
        out[i] = static_cast<double>(x);
      }
    }
  });
  return out;
}

NaiveResult naive_check(const Node& n, std::string& why) {
  if (!n.value) return NaiveResult::Unsupported;
  if (is_complex(n.dtype)) return NaiveResult::Unsupported;  // doubles hold no complex numbers
  for (const NodeRef& i : n.inputs)
    if (!i->value || is_complex(i->dtype)) return NaiveResult::Unsupported;
  std::vector<std::vector<double>> in;
  for (const NodeRef& i : n.inputs) in.push_back(to_doubles(i->value->view()));
  const int64_t count = numel(n.shape);
  Want w(count);
  const OpKind kind = op_kind(n.op);
  const double tol = rel_tol(n.dtype);
  auto out_idx = [&](int64_t i) { return unravel(i, n.shape); };

  switch (n.op) {
    case Op::Full: {
      const FullAttrs a = attrs_of<FullAttrs>(n);
      for (int64_t i = 0; i < count; ++i)
        w.v[i] = is_float(n.dtype) ? a.real : static_cast<double>(a.integer);
      break;
    }
    case Op::Arange: {
      const ArangeAttrs a = attrs_of<ArangeAttrs>(n);
      for (int64_t i = 0; i < count; ++i)
        w.v[i] = is_float(n.dtype) ? a.first + a.step * static_cast<double>(i)
                                   : static_cast<double>(a.int_first + a.int_step * i);
      break;
    }
    case Op::Eye:
      for (int64_t i = 0; i < count; ++i) {
        auto ix = out_idx(i);
        w.v[i] = ix[0] == ix[1];
      }
      break;
    case Op::Cast:
      for (int64_t i = 0; i < count; ++i) {
        if (!is_float(n.dtype) && n.dtype != DType::Bool && !std::isfinite(in[0][i])) w.care[i] = false;
        w.v[i] = in[0][i];
      }
      break;
    case Op::Where:
      for (int64_t i = 0; i < count; ++i) w.v[i] = in[0][i] != 0 ? in[1][i] : in[2][i];
      break;
    case Op::Reshape:
    case Op::Constrain: w.v = in[0]; break;
    case Op::Permute: {
      const std::vector<int> perm = attrs_of<PermuteAttrs>(n).perm;
      for (int64_t i = 0; i < count; ++i) {
        auto ix = out_idx(i);
        std::vector<int64_t> src(ix.size());
        for (size_t d = 0; d < ix.size(); ++d) src[perm[d]] = ix[d];
        w.v[i] = in[0][ravel(src, n.inputs[0]->shape)];
      }
      break;
    }
    case Op::Expand: {
      const Shape& is = n.inputs[0]->shape;
      const size_t lead = n.shape.size() - is.size();
      for (int64_t i = 0; i < count; ++i) {
        auto ix = out_idx(i);
        std::vector<int64_t> src(is.size());
        for (size_t d = 0; d < is.size(); ++d) src[d] = is[d] == 1 ? 0 : ix[d + lead];
        w.v[i] = in[0][ravel(src, is)];
      }
      break;
    }
    case Op::Slice: {
      const SliceAttrs a = attrs_of<SliceAttrs>(n);
      for (int64_t i = 0; i < count; ++i) {
        auto ix = out_idx(i);
        for (size_t d = 0; d < ix.size(); ++d) ix[d] = a.starts[d] + ix[d] * a.steps[d];
        w.v[i] = in[0][ravel(ix, n.inputs[0]->shape)];
      }
      break;
    }
    case Op::Cat: {
      const int dim = attrs_of<CatAttrs>(n).dim;
      for (int64_t i = 0; i < count; ++i) {
        auto ix = out_idx(i);
        for (size_t k = 0; k < n.inputs.size(); ++k) {
          const Shape& s = n.inputs[k]->shape;
          if (ix[dim] < s[dim]) {
            w.v[i] = in[k][ravel(ix, s)];
            break;
          }
          ix[dim] -= s[dim];
        }
      }
      break;
    }
    case Op::Gather:
    case Op::Scatter:
    case Op::ScatterAdd: {  // torch's definitions, index values 1-based, negative from the end
      const int dim = attrs_of<IndexAttrs>(n).dim;
      const Shape& is = n.inputs[1]->shape;
      const int64_t size = n.op == Op::Gather ? n.inputs[0]->shape[dim] : n.shape[dim];
      if (n.op != Op::Gather) w.v = in[0];
      for (int64_t i = 0; i < numel(is); ++i) {
        auto ix = unravel(i, is);
        const int64_t v = static_cast<int64_t>(in[1][i]);
        ix[dim] = v > 0 ? v - 1 : v + size;
        if (n.op == Op::Gather) w.v[i] = in[0][ravel(ix, n.inputs[0]->shape)];
        else if (n.op == Op::Scatter) w.v[ravel(ix, n.shape)] = in[2][i];
        else w.v[ravel(ix, n.shape)] += in[2][i];
      }
      break;
    }
    case Op::WriteRegion: {
      const Shape& vs = n.inputs[1]->shape;
      const std::vector<int64_t> start = attrs_of<WriteAttrs>(n).start;
      for (int64_t i = 0; i < count; ++i) {
        auto ix = out_idx(i);
        bool inside = true;
        for (size_t d = 0; d < ix.size(); ++d) {
          ix[d] -= start[d];
          inside = inside && ix[d] >= 0 && ix[d] < vs[d];
        }
        w.v[i] = inside ? in[1][ravel(ix, vs)] : in[0][i];
      }
      break;
    }
    case Op::Sum:
    case Op::Prod:
    case Op::Max:
    case Op::Min:
    case Op::All:
    case Op::Any: {
      const Shape& is = n.inputs[0]->shape;
      std::vector<bool> red(is.size(), false);
      for (int d : attrs_of<ReduceAttrs>(n).dims) red[d] = true;
      const double init = n.op == Op::Sum || n.op == Op::Any    ? 0
                          : n.op == Op::Prod || n.op == Op::All ? 1
                          : n.op == Op::Max                     ? -INFINITY
                                                                : INFINITY;
      std::fill(w.v.begin(), w.v.end(), init);
      std::vector<double> mag(count, 0);
      for (int64_t j = 0; j < numel(is); ++j) {
        auto ix = unravel(j, is);
        std::vector<int64_t> o;
        for (size_t d = 0; d < ix.size(); ++d)
          if (!red[d]) o.push_back(ix[d]);
        const int64_t k = ravel(o, n.shape);
        const double x = in[0][j];
        double& acc = w.v[k];
        switch (n.op) {
          case Op::Sum:
            acc += x;
            mag[k] += std::abs(x);
            break;
          case Op::Prod:
            acc *= x;
            mag[k] = std::max(mag[k], 1.0) * std::max(std::abs(x), 1.0);
            break;
          case Op::Max: acc = std::isnan(x) || std::isnan(acc) ? kNaN : std::max(acc, x); break;
          case Op::Min: acc = std::isnan(x) || std::isnan(acc) ? kNaN : std::min(acc, x); break;
          case Op::All: acc = acc != 0 && x != 0; break;
          default: acc = acc != 0 || x != 0; break;
        }
      }
      for (int64_t k = 0; k < count; ++k) w.slack[k] = tol * mag[k] * 4;
      break;
    }
    case Op::ArgMax:
    case Op::ArgMin: {
      const Shape& is = n.inputs[0]->shape;
      const std::optional<int> along = attrs_of<ArgReduceAttrs>(n).dim;
      const bool flat = !along;
      const int dim = along.value_or(-1);
      std::vector<double> best(count, kNaN);
      for (int64_t j = 0; j < numel(is); ++j) {
        auto ix = unravel(j, is);
        int64_t k = 0, pos = j;
        if (!flat) {
          pos = ix[dim];
          ix.erase(ix.begin() + dim);
          k = ravel(ix, n.shape);
        }
        const double x = in[0][j];
        if (std::isnan(x)) w.care[k] = false;
        const bool better = std::isnan(best[k]) || (n.op == Op::ArgMax ? x > best[k] : x < best[k]);
        if (better && !std::isnan(x)) {
          best[k] = x;
          w.v[k] = static_cast<double>(pos + 1);
        }
      }
      break;
    }
    case Op::Cumsum:
    case Op::Cumprod:
    case Op::Cummax:
    case Op::Cummin:
    case Op::Sort: {  // line by line, in the order numpy and torch define
      const LineAttrs a = attrs_of<LineAttrs>(n);
      const int dim = static_cast<int>(a.dim);
      const int64_t len = n.shape[dim];
      auto less = [](double x, double y) { return !std::isnan(x) && (std::isnan(y) || x < y); };
      for (int64_t i = 0; i < count; ++i) {
        auto ix = out_idx(i);
        if (ix[dim] != 0) continue;  // the first element of a line
        std::vector<int64_t> at(len);
        for (int64_t k = 0; k < len; ++k) ix[dim] = k, at[k] = ravel(ix, n.shape);
        if (n.op == Op::Sort) {  // topk: out's line is the first len of x's (xlen) sorted
          const Shape& xs = n.inputs[0]->shape;
          const int64_t xlen = xs[dim];
          std::vector<int64_t> xat(xlen);
          for (int64_t k = 0; k < xlen; ++k) ix[dim] = k, xat[k] = ravel(ix, xs);
          std::vector<int64_t> order(xlen);
          std::iota(order.begin(), order.end(), 0);
          std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
            return a.reverse ? less(in[0][xat[q]], in[0][xat[p]]) : less(in[0][xat[p]], in[0][xat[q]]);
          });
          for (int64_t k = 0; k < len; ++k) w.v[at[k]] = a.indices ? order[k] + 1.0 : in[0][xat[order[k]]];
          continue;
        }
        double acc = 0, mag = 0;
        int64_t best = 0;
        for (int64_t j = 0; j < len; ++j) {
          const int64_t k = a.reverse ? len - 1 - j : j;
          const double x = in[0][at[k]];
          if (n.op == Op::Cumsum) acc = j ? acc + x : x, mag += std::abs(x);
          else if (n.op == Op::Cumprod)
            acc = j ? acc * x : x, mag = std::max(mag, 1.0) * std::max(std::abs(x), 1.0);
          else if (j == 0 ||
                   (!std::isnan(acc) && (std::isnan(x) || (n.op == Op::Cummax ? x >= acc : x <= acc))))
            acc = x, best = k;
          w.v[at[k]] = a.indices ? best + 1.0 : acc;
          w.slack[at[k]] = tol * mag * 4;
        }
      }
      break;
    }
    case Op::Matmul: {
      const Shape &as = n.inputs[0]->shape, &bs = n.inputs[1]->shape;
      const size_t r = as.size();
      if (r < 2 || bs.size() != r || n.shape.size() != r) return NaiveResult::Unsupported;
      for (size_t d = 0; d + 2 < r; ++d)
        if (as[d] != bs[d]) return NaiveResult::Unsupported;
      const int64_t K = as[r - 1];
      for (int64_t i = 0; i < count; ++i) {
        auto ix = out_idx(i);
        auto ai = ix, bi = ix;
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          ai[r - 1] = k;
          bi[r - 2] = k;
          const double p = in[0][ravel(ai, as)] * in[1][ravel(bi, bs)];
          acc += p;
          mag += std::abs(p);
        }
        w.v[i] = acc;
        w.slack[i] = tol * mag * 4;
      }
      break;
    }
    default:
      if (kind != OpKind::Map) return NaiveResult::Unsupported;
      for (int64_t i = 0; i < count; ++i) {
        bool care = true;
        bool ints = true;
        for (const NodeRef& x : n.inputs) ints = ints && !is_float(x->dtype);
        if (n.inputs.size() == 1) {
          const double x = in[0][i];
          w.v[i] = unary(n.op, x);
          if (std::isnan(x) && n.op == Op::Relu) care = false;  // relu(nan) undocumented
        } else if (n.inputs.size() == 2) {
          w.v[i] = binary(n.op, in[0][i], in[1][i], ints, care);
        } else {
          return NaiveResult::Unsupported;
        }
        w.care[i] = care;
      }
  }

  const std::vector<double> got = to_doubles(n.value->view());
  for (int64_t i = 0; i < count; ++i) {
    bool care = w.care[i];
    const double want = to_dtype(w.v[i], n.dtype, care);
    if (!care) continue;
    const double g = got[i];
    if (std::isnan(want) && std::isnan(g)) continue;
    if (g == want) continue;
    const double allowed = w.slack[i] + tol * std::max(1.0, std::abs(want));
    if (tol > 0 && std::abs(g - want) <= allowed) continue;
    why = cat_str(op_def(n.op).name, " ", shape_str(n.shape), " ", dtype_name(n.dtype), " element ", i,
                  ": evaluator gives ", num_str(g), ", naive reference ", num_str(want));
    return NaiveResult::Mismatch;
  }
  return NaiveResult::Match;
}

}  // namespace tapestry::fuzz
