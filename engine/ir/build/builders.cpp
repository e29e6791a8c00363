#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/empty.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/packed.hpp"
#include "engine/ir/dtype_support.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

namespace {

std::string dt(DType t) { return std::string(dtype_name(t)); }

// The dtype an operand takes when combined with a tensor of dtype `other`.
DType operand_dtype(const Operand& o) { return o.weak ? scalar_default_dtype(o.kind) : o.node->dtype; }

// Common dtype of map operands: tensors promote among themselves, then weak
// scalars fit into the result (numpy NEP 50).
DType common_dtype(std::initializer_list<const Operand*> ops) {
  std::optional<DType> strong;
  for (const Operand* o : ops)
    if (!o->weak) strong = strong ? promote(*strong, o->node->dtype) : o->node->dtype;
  if (!strong) {  // only Lua scalars: the widest kind decides
    DType t = DType::Bool;
    for (const Operand* o : ops) t = promote(t, operand_dtype(*o));
    return t;
  }
  DType t = *strong;
  for (const Operand* o : ops)
    if (o->weak) t = promote_weak(t, o->kind);
  return t;
}

// By reference: a Lua expression builds a few of these per operation, and a copy is an allocation.
const Shape& operand_shape(const Operand& o) {
  static const Shape scalar;
  return o.weak ? scalar : o.node->shape;
}

// The operand as a node of `dtype` and `shape` (casting and broadcasting).
NodeRef materialize(const Operand& o, DType dtype, const Shape& shape) {
  if (o.weak) {
    if (is_inexact(dtype))
      return full(shape, o.kind == ScalarKind::Float ? o.real : static_cast<double>(o.integer), dtype);
    if (o.kind == ScalarKind::Float) {  // only reachable for an explicit cast target
      // As a cast: to bool any nonzero is true (0.5 too), to an integer it truncates.
      if (dtype == DType::Bool) return full_int(shape, o.real != 0, dtype);
      return full_int(shape, static_cast<int64_t>(o.real), dtype);
    }
    // numpy 2 (NEP 50) refuses a Python int that the array's integer type cannot hold.
    user_check(dtype == DType::Bool || dtype == DType::I64 ||
                   (o.integer >= int_min(dtype) && o.integer <= int_max(dtype)),
               "the number ", o.integer, " does not fit in ", dt(dtype), " (cast the tensor to i64 first)");
    return full_int(shape, o.integer, dtype);
  }
  // The common case, a tensor already of the dtype and shape: one reference taken, not the
  // two that cast's and broadcast_to's returned copies take and drop (atomic counts).
  if (o.node->dtype == dtype && o.node->shape == shape) return o.node;
  return broadcast_to(cast(o.node, dtype), shape);
}

// The name of whichever operand is complex, for messages ("a" or "b").
const char* complex_operand(const Operand& a, const Operand& b) {
  return !a.weak && is_complex(a.node->dtype) ? "a" : "b";
}

// A float converted to an integer dtype as the Cast kernel converts it (fn::Cast): truncated
// toward zero, NaN to 0, saturated at the type's range; to bool, nonzero.
int64_t float_to_int_like_cast(double v, DType t) {
  if (t == DType::Bool) return v != 0;
  if (v != v) return 0;
  const double lo = static_cast<double>(int_min(t)), top = static_cast<double>(int_max(t)) + 1.0;
  if (v >= top) return int_max(t);
  if (v < lo) return int_min(t);
  return static_cast<int64_t>(v);
}

NodeRef map_node(Op op, std::vector<NodeRef> ins, DType out) {
  Shape shape = ins.front()->shape;
  return op_node(op, std::move(ins), Attrs{}, std::move(shape), out);
}

std::vector<int> normalize_dims(std::vector<int> dims, int rank) {
  if (dims.empty()) {
    dims.resize(rank);
    std::iota(dims.begin(), dims.end(), 0);
    return dims;
  }
  std::sort(dims.begin(), dims.end());
  for (size_t i = 0; i < dims.size(); ++i) {
    internal_check(dims[i] >= 0 && dims[i] < rank);
    user_check(i == 0 || dims[i] != dims[i - 1], "dimension ", dims[i] + 1, " is listed twice in dims");
  }
  return dims;
}

Shape reduced_shape(const Shape& s, const std::vector<int>& dims, bool keepdim) {
  Shape out;
  for (int d = 0; d < static_cast<int>(s.size()); ++d) {
    const bool reduced = std::binary_search(dims.begin(), dims.end(), d);
    if (!reduced) out.push_back(s[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// "{1,3}": 1-based, as the user wrote them.
std::string dims_str(const std::vector<int>& dims) {
  std::string s = "{";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(dims[i] + 1);  // appended on its own: GCC 12 warns (-Wrestrict) at a + b
  }
  return s + "}";
}

int64_t reduced_count(const Shape& s, const std::vector<int>& dims) {
  int64_t n = 1;
  for (int d : dims) n *= s[d];
  return n;
}

}  // namespace

Operand Operand::number(double v) {
  Operand o;
  o.weak = true;
  o.kind = ScalarKind::Float;
  o.real = v;
  o.integer = 0;
  return o;
}
Operand Operand::integer_number(int64_t v) {
  Operand o;
  o.weak = true;
  o.kind = ScalarKind::Int;
  o.integer = v;
  o.real = static_cast<double>(v);
  return o;
}
Operand Operand::boolean(bool v) {
  Operand o;
  o.weak = true;
  o.kind = ScalarKind::Bool;
  o.integer = v ? 1 : 0;
  o.real = v ? 1 : 0;
  return o;
}

// --- generators ----------------------------------------------------------------

void check_shape(const Shape& shape, const char* what) {
  if (shape.size() > static_cast<size_t>(kMaxDims))
    user_error(what, " has ", shape.size(), " dims; a tensor has at most ", kMaxDims);
  int64_t n = 1;
  for (int64_t d : shape) {
    // Not user_check: its message (shape_str) would be built on every call.
    if (d < 0) user_error(what, " must have sizes of at least 0, got ", shape_str(shape));
    if (d > 0 && n > (int64_t{1} << 50) / d)
      user_error(what, " ", shape_str(shape), " is too large (more than 2^50 elements)");
    n *= d;
  }
}

// The value a constant of float (or complex) type t holds: rounded once to t's precision.
double round_to(double v, DType t) {
  switch (t) {
    case DType::F32:
    case DType::C64: return static_cast<double>(static_cast<float>(v));
    case DType::F16: return static_cast<double>(f16(v));
    case DType::BF16: return static_cast<double>(bf16(v));
    default: return v;
  }
}

NodeRef full(const Shape& shape, double value, DType dtype) {
  check_shape(shape, "shape");
  if (is_inexact(dtype)) {
    const double v = round_to(value, dtype);
    return make_node(Op::Full, {}, FullAttrs{dtype, v, 0}.encode(), shape, dtype);
  }
  user_check(fits_int64(value) || dtype == DType::Bool, "cannot fill a ", dt(dtype), " tensor with ", value);
  const int64_t iv = dtype == DType::Bool ? (value != 0) : static_cast<int64_t>(value);
  return full_int(shape, iv, dtype);
}

NodeRef full_int(const Shape& shape, int64_t value, DType dtype) {
  check_shape(shape, "shape");
  if (is_inexact(dtype)) return full(shape, static_cast<double>(value), dtype);
  value = wrap_int(value, dtype);  // wraps, as a C cast (bool: nonzero)
  return make_node(Op::Full, {}, FullAttrs{dtype, static_cast<double>(value), value}.encode(), shape, dtype);
}

NodeRef scalar(const Operand& s, DType dtype) { return materialize(s, dtype, Shape{}); }

NodeRef arange(double first, double last, double step, DType dtype) {
  if (is_storage_or_complex(dtype))
    return cast(arange(first, last, step, compute_dtype(real_dtype(dtype))), dtype);
  user_check(std::isfinite(first) && std::isfinite(last) && std::isfinite(step),
             "first, last and step must be finite, got ", first, ", ", last, ", ", step);
  user_check(step != 0, "step must not be 0");
  user_check(dtype != DType::Bool, "dtype bool is not supported");
  if (is_int(dtype)) {
    user_check(first == std::floor(first) && step == std::floor(step), "integer dtype ", dt(dtype),
               " needs integer first and step, got ", first, " and ", step);
    const double end = step > 0 ? std::floor(last) : std::ceil(last);  // the last point is an integer
    user_check(fits_int64(first) && fits_int64(step) && fits_int64(end), "range from ", first, " to ", last,
               " by step ", step, " does not fit in ", dt(dtype));
    return arange_int(static_cast<int64_t>(first), static_cast<int64_t>(end), static_cast<int64_t>(step),
                      dtype);
  }
  const double span = (last - first) / step;
  user_check(span < 0x1p50, "range from ", first, " to ", last, " by step ", step,
             " is too large (more than 2^50 elements)");
  // Inclusive like a Lua numeric for; tolerate rounding at the last point.
  // An empty range (last before first) is an empty tensor, as a Lua for runs no iteration.
  const int64_t n = span < 0 ? 0 : static_cast<int64_t>(std::floor(span + 1e-9)) + 1;
  const ArangeAttrs a{dtype, first, step, static_cast<int64_t>(first), static_cast<int64_t>(step)};
  check_shape({n}, "range");
  return make_node(Op::Arange, {}, a.encode(), Shape{n}, dtype);
}

NodeRef arange_int(int64_t first, int64_t last, int64_t step, DType dtype) {
  user_check(step != 0, "step must not be 0");
  user_check(is_int(dtype), "integer first, last and step need an integer dtype, got ", dt(dtype));
  // In 128 bits: last - first overflows 64 near math.mininteger / math.maxinteger.
  const __int128 diff = static_cast<__int128>(last) - first;
  const __int128 span = diff / step;
  user_check(span < (__int128{1} << 50), "range from ", first, " to ", last, " by step ", step,
             " is too large (more than 2^50 elements)");
  const bool none = diff != 0 && (diff > 0) != (step > 0);  // an empty range: an empty tensor
  const int64_t n = none ? 0 : static_cast<int64_t>(span) + 1;
  if (dtype != DType::I64 && n > 0) {            // i8, u8, i32
    const int64_t end = first + step * (n - 1);  // within [first, last]: no overflow
    user_check(
        first >= int_min(dtype) && first <= int_max(dtype) && end >= int_min(dtype) && end <= int_max(dtype),
        "range from ", first, " to ", end, " does not fit in ", dt(dtype));
  }
  const ArangeAttrs a{dtype, static_cast<double>(first), static_cast<double>(step), first, step};
  check_shape({n}, "range");
  return make_node(Op::Arange, {}, a.encode(), Shape{n}, dtype);
}

NodeRef linspace(double a, double b, int64_t n, DType dtype) {
  user_check(std::isfinite(a) && std::isfinite(b), "a and b must be finite, got ", a, " and ", b);
  user_check(n >= 0, "n must be at least 0, got ", n);
  user_check(is_inexact(dtype), "dtype must be a float or complex type, got ", dt(dtype));
  if (is_storage_or_complex(dtype)) return cast(linspace(a, b, n, compute_dtype(real_dtype(dtype))), dtype);
  check_shape({n}, "shape");
  return make_node(Op::Linspace, {}, LinspaceAttrs{dtype, a, b}.encode(), Shape{n}, dtype);
}

NodeRef eye(int64_t n, int64_t m, DType dtype) {
  if (is_storage_or_complex(dtype)) return cast(eye(n, m, compute_dtype(real_dtype(dtype))), dtype);
  check_shape({n, m}, "shape");
  return make_node(Op::Eye, {}, EyeAttrs{dtype}.encode(), Shape{n, m}, dtype);
}

static NodeRef random_node(Op op, const Shape& shape, uint64_t seed, DType dtype) {
  check_shape(shape, "shape");
  user_check(is_float(dtype), "dtype must be a real float type (f16, bf16, f32, f64), got ", dt(dtype));
  if (is_half(dtype)) return cast(random_node(op, shape, seed, DType::F32), dtype);
  return make_node(op, {}, RandAttrs{dtype, seed}.encode(), shape, dtype);
}
NodeRef rand(const Shape& shape, uint64_t seed, DType dtype) {
  return random_node(Op::Rand, shape, seed, dtype);
}
NodeRef randn(const Shape& shape, uint64_t seed, DType dtype) {
  return random_node(Op::Randn, shape, seed, dtype);
}

// --- maps ----------------------------------------------------------------------

NodeRef cast(const NodeRef& x, DType to) {
  if (x->dtype == to) return x;
  if (x->op == Op::Full) {  // fold: a constant stays a constant, converted as the kernel would
    const FullAttrs c = attrs_of<FullAttrs>(*x);
    if (is_inexact(to))
      return full(x->shape, is_inexact(x->dtype) ? c.real : static_cast<double>(c.integer), to);
    if (is_inexact(x->dtype)) return full_int(x->shape, float_to_int_like_cast(c.real, to), to);
    return full_int(x->shape, c.integer, to);
  }
  return packed_map(op_node(Op::Cast, {x}, CastAttrs{to}.encode(), x->shape, to));
}

namespace {

NodeRef unary_node(Op op, const NodeRef& x) {
  const DType t = x->dtype;
  if (op == Op::Real || op == Op::Imag || op == Op::Conj || op == Op::Angle) return complex_part(op, x);
  if (is_half(t) && op != Op::LogicalNot) {  // computed in f32, the result stored back in t
    const NodeRef r = unary(op, cast(x, DType::F32));
    return r->dtype == DType::F32 ? cast(r, t) : r;
  }
  if (is_complex(t)) {
    user_check(map_takes_complex(op), "x is ", dt(t), ": ", op_def(op).name,
               " is not defined for complex numbers (see docs/dtypes.md)");
    if (op == Op::Abs) return map_node(op, {x}, real_dtype(t));
    if (op != Op::LogicalNot) return map_node(op, {x}, t);
  }
  switch (op) {
    case Op::Neg:
      user_check(t != DType::Bool, "negation of a bool tensor is not supported (use tp.logical_not)");
      return map_node(op, {x}, t);
    case Op::Abs:
    case Op::Relu:
    case Op::Square:
    case Op::Sign: return map_node(op, {x}, t);
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
      if (!is_float(t)) return x;  // integers are already whole
      return map_node(op, {x}, t);
    case Op::LogicalNot: return map_node(op, {cast(x, DType::Bool)}, DType::Bool);
    default: {  // float-valued math: exp log sqrt rsqrt sin cos tanh sigmoid gelu reciprocal
      const DType f = float_result(t);
      return map_node(op, {cast(x, f)}, f);
    }
  }
}

}  // namespace

// A map of packed tensors (declared, stored packed) is computed on their stored tiles.
NodeRef unary(Op op, const NodeRef& x) {
  internal_check(op_kind(op) == OpKind::Map && op_def(op).arity == 1 && op != Op::Cast);
  return packed_map(unary_node(op, x));
}

NodeRef binary(Op op, const Operand& a, const Operand& b) {
  internal_check(op_kind(op) == OpKind::Map && op_def(op).arity == 2);
  if (op == Op::Complex) return make_complex(a, b);
  Shape shape = broadcast_shapes(operand_shape(a), operand_shape(b));
  DType t = common_dtype({&a, &b});
  if (is_half(t) && op != Op::LogicalAnd && op != Op::LogicalOr) {
    // Computed in f32 from the operands in t (a Lua number rounded to t first, as numpy), and
    // stored back in t; comparisons give bool.
    const NodeRef r =
        binary(op, cast(materialize(a, t, shape), DType::F32), cast(materialize(b, t, shape), DType::F32));
    return r->dtype == DType::F32 ? cast(r, t) : r;
  }
  if (is_complex(t) && !map_takes_complex(op) && op != Op::LogicalAnd && op != Op::LogicalOr)
    user_error(complex_operand(a, b), " is ", dt(t), ": ", op_def(op).name,
               " is not defined for complex numbers (numpy orders them lexicographically; Tapestry does "
               "not: compare :real() or :abs())");
  DType out = t;
  switch (op) {
    case Op::Sub:
      user_check(t != DType::Bool,
                 "subtraction of bool tensors is not supported (use tp.logical_xor or cast)");
      break;
    case Op::Div: t = out = divide_result(t); break;
    case Op::Atan2: t = out = float_result(t); break;
    case Op::FloorDiv:
    case Op::Mod:
    case Op::Pow:
      if (t == DType::Bool) t = out = DType::I64;
      break;
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge: out = DType::Bool; break;
    case Op::LogicalAnd:
    case Op::LogicalOr: t = out = DType::Bool; break;
    default: break;
  }
  std::vector<NodeRef> ins;  // (an initializer list would copy both references: two atomic pairs)
  ins.reserve(2);
  ins.push_back(materialize(a, t, shape));
  ins.push_back(materialize(b, t, shape));
  return packed_map(op_node(op, std::move(ins), Attrs{}, std::move(shape), out));
}

// numpy's real, imag, conj and angle; of a real x: x, zeros, x and atan2(0, x).
NodeRef complex_part(Op op, const NodeRef& x) {
  const DType t = x->dtype;
  if (is_complex(t)) return map_node(op, {x}, op == Op::Conj ? t : real_dtype(t));
  switch (op) {
    case Op::Real:
    case Op::Conj: return x;
    case Op::Imag: return full_int(x->shape, 0, t);
    default:
      if (is_half(t)) return cast(complex_part(op, cast(x, DType::F32)), t);
      return binary(Op::Atan2, Operand::number(0), x);
  }
}

// re + i im: the parts in one real float type (f32 -> c64, f64 -> c128; integers as float math).
NodeRef make_complex(const Operand& re, const Operand& im) {
  const Shape shape = broadcast_shapes(operand_shape(re), operand_shape(im));
  const DType t = common_dtype({&re, &im});
  if (is_complex(t))
    user_error(complex_operand(re, im) == std::string("a") ? "re" : "im", " is ", dt(t),
               ": the parts of a complex number are real");
  // Two Lua numbers make the default float's complex (c64), as tp.tensor{1, 2} is f32.
  const DType f = re.weak && im.weak ? kDefaultFloat : compute_dtype(float_result(t));
  return op_node(Op::Complex, {materialize(re, f, shape), materialize(im, f, shape)}, Attrs{}, shape,
                 complex_dtype(f));
}

NodeRef where(const Operand& cond, const Operand& a, const Operand& b) {
  const Shape shape =
      broadcast_shapes(broadcast_shapes(operand_shape(cond), operand_shape(a)), operand_shape(b));
  const DType t = common_dtype({&a, &b});
  return op_node(Op::Where,
                 {materialize(cond, DType::Bool, shape), materialize(a, t, shape), materialize(b, t, shape)},
                 Attrs{}, shape, t);
}

NodeRef clamp(const NodeRef& x, std::optional<Operand> lo, std::optional<Operand> hi) {
  NodeRef y = x;
  if (lo) y = binary(Op::Maximum, y, *lo);
  if (hi) y = binary(Op::Minimum, y, *hi);
  return y;
}

// --- reductions -------------------------------------------------------------------

NodeRef reduce(Op op, const NodeRef& x, std::vector<int> dims, bool keepdim) {
  internal_check(op_kind(op) == OpKind::Reduce);
  const bool logical = op == Op::All || op == Op::Any;
  if (is_half(x->dtype) && !logical)  // accumulated in f32 (the kernel's f64), stored back
    return cast(reduce(op, cast(x, DType::F32), std::move(dims), keepdim), x->dtype);
  if (is_complex(x->dtype) && (op == Op::Max || op == Op::Min))
    user_error("x is ", dt(x->dtype), ": ", op_def(op).name,
               " is not defined for complex numbers (numpy orders them lexicographically; Tapestry does "
               "not: reduce x:real() or x:abs())");
  dims = normalize_dims(std::move(dims), static_cast<int>(x->shape.size()));
  if (!dims.empty() && x->op == Op::Declare)  // of a packed tensor (a Declare): from its stored tiles
    if (NodeRef r = packed_reduce(op, x, dims))
      return keepdim ? reshape(r, reduced_shape(x->shape, dims, true)) : r;
  NodeRef in = x;
  DType out = x->dtype;
  if (op == Op::Sum || op == Op::Prod) {
    if (!is_inexact(out)) out = DType::I64;  // numpy sums ints in the platform int (u8 too: no u64)
  } else if (op == Op::All || op == Op::Any) {
    in = cast(x, DType::Bool);
    out = DType::Bool;
  }
  if (dims.empty()) return in->dtype == out ? in : cast(in, out);  // a 0-d x: nothing to reduce
  if (reduced_count(x->shape, dims) == 0) {  // numpy's identities; max and min have none
    user_check(op != Op::Max && op != Op::Min, "cannot take the ", op == Op::Max ? "max" : "min",
               " over the empty dims ", dims_str(dims), " of x ", shape_str(x->shape),
               " (a zero-size reduction has no identity)");
    return full(reduced_shape(x->shape, dims, keepdim), op == Op::Prod || op == Op::All ? 1 : 0, out);
  }
  NodeRef r = op_node(op, {in}, ReduceAttrs{dims}.encode(), reduced_shape(x->shape, dims, false), out);
  if (keepdim) r = reshape(r, reduced_shape(x->shape, dims, true));
  return r;
}

NodeRef mean(const NodeRef& x, std::vector<int> dims, bool keepdim) {
  if (is_half(x->dtype)) return cast(mean(cast(x, DType::F32), std::move(dims), keepdim), x->dtype);
  dims = normalize_dims(std::move(dims), static_cast<int>(x->shape.size()));
  const DType f = divide_result(x->dtype);
  NodeRef s = reduce(Op::Sum, cast(x, f), dims, keepdim);
  return binary(Op::Div, s, Operand::number(static_cast<double>(reduced_count(x->shape, dims))));
}

NodeRef var(const NodeRef& x, std::vector<int> dims, double correction, bool keepdim) {
  user_check(std::isfinite(correction), "correction must be finite, got ", correction);
  if (is_half(x->dtype))
    return cast(var(cast(x, DType::F32), std::move(dims), correction, keepdim), x->dtype);
  dims = normalize_dims(std::move(dims), static_cast<int>(x->shape.size()));
  const DType f = divide_result(x->dtype);
  const NodeRef xf = cast(x, f);
  const NodeRef m = mean(xf, dims, /*keepdim=*/true);
  // A complex deviation counts by its squared modulus: the variance is real, as numpy's.
  const NodeRef dev = binary(Op::Sub, xf, m);
  const NodeRef d = unary(Op::Square, is_complex(f) ? unary(Op::Abs, dev) : dev);
  // numpy clamps the divisor at 0: var of one element with correction 1 is nan, not -0 or inf.
  const double n = std::max(static_cast<double>(reduced_count(x->shape, dims)) - correction, 0.0);
  return binary(Op::Div, reduce(Op::Sum, d, dims, keepdim), Operand::number(n));
}

NodeRef std_dev(const NodeRef& x, std::vector<int> dims, double correction, bool keepdim) {
  return unary(Op::Sqrt, var(x, std::move(dims), correction, keepdim));
}

NodeRef norm(const NodeRef& x, double p, std::vector<int> dims, bool keepdim) {
  user_check(!std::isnan(p) && p > 0, "p must be positive (or math.huge), got ", p);
  if (is_half(x->dtype)) return cast(norm(cast(x, DType::F32), p, std::move(dims), keepdim), x->dtype);
  const DType f = float_result(x->dtype);
  const NodeRef a = unary(Op::Abs, cast(x, f));
  if (std::isinf(p)) return reduce(Op::Max, a, std::move(dims), keepdim);
  if (p == 1) return reduce(Op::Sum, a, std::move(dims), keepdim);
  if (p == 2) return unary(Op::Sqrt, reduce(Op::Sum, unary(Op::Square, a), std::move(dims), keepdim));
  const NodeRef s = reduce(Op::Sum, binary(Op::Pow, a, Operand::number(p)), std::move(dims), keepdim);
  return binary(Op::Pow, s, Operand::number(1.0 / p));
}

NodeRef argreduce(Op op, const NodeRef& x, std::optional<int> dim, bool keepdim) {
  internal_check(op_kind(op) == OpKind::ArgReduce);
  if (is_half(x->dtype)) return argreduce(op, cast(x, DType::F32), dim, keepdim);  // exact in f32
  user_check(!is_complex(x->dtype), "x is ", dt(x->dtype), ": ", op_def(op).name,
             " is not defined for complex numbers (numpy orders them lexicographically; Tapestry does "
             "not: use x:real() or x:abs())");
  Shape out;
  if (dim) {
    for (int d = 0; d < static_cast<int>(x->shape.size()); ++d)
      if (d != *dim) out.push_back(x->shape[d]);
  }
  const int64_t along = dim ? x->shape[*dim] : numel(x->shape);
  user_check(along > 0, "cannot take the ", op_def(op).name, " of ",
             dim ? cat_str("the empty dim ", *dim + 1, " of x ") : std::string("the empty x "),
             shape_str(x->shape), " (numpy refuses an empty sequence too)");
  NodeRef r = op_node(op, {x}, ArgReduceAttrs{dim}.encode(), out, DType::I64);
  if (keepdim) {
    Shape kd = x->shape;
    if (dim) kd[*dim] = 1;
    else std::fill(kd.begin(), kd.end(), 1);
    r = reshape(r, kd);
  }
  return r;
}

// --- contractions -----------------------------------------------------------------

NodeRef matmul(const NodeRef& a0, const NodeRef& b0) {
  if (a0->shape.empty() || b0->shape.empty())  // (user_check would format the shapes every call)
    user_error("operands must have at least 1 dimension, got ", shape_str(a0->shape), " @ ",
               shape_str(b0->shape));
  const DType t = promote(a0->dtype, b0->dtype);
  if (is_half(t)) return cast(matmul(cast(a0, DType::F32), cast(b0, DType::F32)), t);  // computed in f32
  if (NodeRef sparse = tile_matmul(a0, b0)) return sparse;  // a block-sparse a: its nonzero tiles only
  // A matrix times a vector (CG's A:matmul(p), once an iteration): the same three nodes as
  // below ({k} -> {k,1}, the 2-D product, {n,1} -> {n}), without the batch shapes and the
  // general reshape's checks, which cost more than the nodes.
  if (a0->shape.size() == 2 && b0->shape.size() == 1 && a0->dtype == t && b0->dtype == t &&
      a0->shape[1] == b0->shape[0] && a0->shape[0] > 0 && a0->shape[1] > 0) {
    const int64_t n = a0->shape[0], k = a0->shape[1];
    const NodeRef col = b0->op == Op::Reshape ? reshape(b0, {k, 1})  // (reshape folds the chain)
                                              : op_node(Op::Reshape, {b0}, Attrs{}, Shape{k, 1}, t);
    return op_node(Op::Reshape, {op_node(Op::Matmul, {a0, col}, Attrs{}, Shape{n, 1}, t)}, Attrs{}, Shape{n},
                   t);
  }
  NodeRef a = cast(a0, t), b = cast(b0, t);
  const bool a_vec = a->shape.size() == 1, b_vec = b->shape.size() == 1;
  if (a_vec) a = unsqueeze(a, 0);  // {k} -> {1,k}
  if (b_vec) b = unsqueeze(b, 1);  // {k} -> {k,1}
  const Shape& as = a->shape;
  const Shape& bs = b->shape;
  const int64_t n = as[as.size() - 2], k = as.back(), k2 = bs[bs.size() - 2], m = bs.back();
  if (k != k2)
    user_error("inner dimensions differ: ", shape_str(a0->shape), " @ ", shape_str(b0->shape), " (", k,
               " ~= ", k2, ")");
  const Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(abatch, bbatch);
  } catch (const Error&) {
    user_error("batch dimensions cannot be broadcast: ", shape_str(a0->shape), " @ ", shape_str(b0->shape));
  }
  Shape ashape = batch, bshape = batch, out = batch;
  ashape.insert(ashape.end(), {n, k});
  bshape.insert(bshape.end(), {k, m});
  out.insert(out.end(), {n, m});
  NodeRef r;
  if (k == 0 && !is_empty(out)) {
    r = full(out, 0, t);  // an empty inner dim sums nothing: zeros (numpy); an empty result folds in op_node
  } else if (!abatch.empty() && bbatch.empty()) {
    // A matrix shared by every batch (a weight): the batch folds into the rows, so b is read
    // whole by every block instead of expanded to the batch size (and shipped so).
    const NodeRef rows =
        op_node(Op::Matmul, {reshape(a, {numel(batch) * n, k}), b}, Attrs{}, {numel(batch) * n, m}, t);
    r = reshape(rows, out);
  } else {
    r = op_node(Op::Matmul, {broadcast_to(a, ashape), broadcast_to(b, bshape)}, Attrs{}, out, t);
  }
  if (a_vec || b_vec) {
    Shape final_shape = batch;
    if (!a_vec) final_shape.push_back(n);
    if (!b_vec) final_shape.push_back(m);
    r = reshape(r, final_shape);
  }
  return r;
}

NodeRef constrain(const NodeRef& x, std::vector<int64_t> parts, bool replicated) {
  user_check(parts.size() == x->shape.size(), "layout has ", parts.size(), " dims but the tensor ",
             shape_str(x->shape), " has ", x->shape.size());
  for (size_t d = 0; d < parts.size(); ++d)
    user_check(parts[d] == kPartsPerRank || (parts[d] >= 1 && parts[d] <= std::max<int64_t>(x->shape[d], 1)),
               "cannot split dimension ", d + 1, " of size ", x->shape[d], " into ", parts[d], " parts");
  // The last constraint wins, but a computed one stays (as in reshape: its input may have no
  // value, and a loop of constrained steps would recompute every earlier one).
  const bool computed = x->value || x->stored;
  const NodeRef& src = x->op == Op::Constrain && !computed ? x->inputs[0] : x;
  if (replicated) parts.assign(parts.size(), 1);
  return op_node(Op::Constrain, {src}, ConstrainAttrs{std::move(parts), replicated}.encode(), x->shape,
                 x->dtype);
}

NodeRef write_region(const NodeRef& base, std::vector<int64_t> start, const Shape& count,
                     const Operand& value) {
  const size_t r = base->shape.size();
  internal_check(start.size() == r && count.size() == r);
  for (size_t d = 0; d < r; ++d)
    user_check(start[d] >= 0 && count[d] >= 0 && start[d] + count[d] <= base->shape[d],
               "region out of bounds in dimension ", d + 1, " of ", shape_str(base->shape));
  const Shape vs = operand_shape(value);
  user_check(broadcastable_to(vs, count), "value of shape ", shape_str(vs),
             " cannot be broadcast to the region ", shape_str(count), " of ", shape_str(base->shape));
  if (count == base->shape) return materialize(value, base->dtype, base->shape);
  if (is_empty(count)) return base;  // writes nothing
  return op_node(Op::WriteRegion, {base, materialize(value, base->dtype, count)},
                 WriteAttrs{std::move(start)}.encode(), base->shape, base->dtype);
}

}  // namespace tapestry::build
