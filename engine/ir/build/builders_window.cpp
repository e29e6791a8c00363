// Builders for padding, rolling and the window ops (stencil, conv2d, pools).
//   NodeRef p = build::pad(x, {1, 1}, {1, 1}, build::PadMode::Periodic, 0);
//   NodeRef y = build::stencil(x, k, build::Boundary::Zero);   // Correlate, x's shape
//   NodeRef c = build::conv2d(x, w, build::Conv2dOptions{});   // {N,O,OH,OW}
// Pad and roll are slices and cats; the window ops validate every size here so that the
// signature and the kernels can assume a well-formed node.
#include <cmath>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/empty.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

namespace {

std::string dt(DType t) { return std::string(dtype_name(t)); }

// A constant block of x's dtype for constant padding: the value cast as x:cast casts it.
NodeRef constant_like(const Shape& s, const Operand& value, DType t) {
  if (value.kind != ScalarKind::Float) return full_int(s, value.integer, t);  // exact, i32 wraps
  if (is_inexact(t)) return full(s, value.real, t);
  if (t == DType::Bool) return full_int(s, value.real != 0, t);
  user_check(fits_int64(value.real), "value ", value.real, " is out of range for a ", dt(t), " tensor");
  return full_int(s, static_cast<int64_t>(value.real), t);  // truncates toward zero, as a cast
}

// Pads of one dim by one mode: the pieces to cat around x.
NodeRef pad_dim(const NodeRef& x, int d, int64_t before, int64_t after, PadMode mode, const Operand& value) {
  const int64_t n = x->shape[d];
  std::vector<NodeRef> parts;
  auto block = [&](int64_t len) {
    Shape s = x->shape;
    s[d] = len;
    return constant_like(s, value, x->dtype);
  };
  if (mode == PadMode::Constant) {
    if (before > 0) parts.push_back(block(before));
    parts.push_back(x);
    if (after > 0) parts.push_back(block(after));
  } else if (mode == PadMode::Periodic) {
    user_check(before <= n && after <= n, "periodic padding of ", before, " and ", after,
               " is more than dimension ", d + 1, " of size ", n, " (shape ", shape_str(x->shape), ")");
    if (before > 0) parts.push_back(narrow(x, d, n - before, before));
    parts.push_back(x);
    if (after > 0) parts.push_back(narrow(x, d, 0, after));
  } else {
    // Mirror images are slices with step -1: rows before..1 and n-2..n-1-after.
    user_check(before < n && after < n, "reflect padding of ", before, " and ", after, " needs dimension ",
               d + 1, " larger than both, got size ", n, " (shape ", shape_str(x->shape), ")");
    const auto mirror = [&](int64_t first, int64_t len) {
      std::vector<int64_t> start(x->shape.size(), 0), step(x->shape.size(), 1);
      Shape count = x->shape;
      start[d] = first;
      step[d] = -1;
      count[d] = len;
      return slice(x, start, step, count);
    };
    if (before > 0) parts.push_back(mirror(before, before));
    parts.push_back(x);
    if (after > 0) parts.push_back(mirror(n - 2, after));
  }
  return cat(parts, d);
}

DType window_dtype(const NodeRef& x, const NodeRef& k, const char* kname) {
  const DType t = promote(x->dtype, k->dtype);
  user_check(t != DType::Bool, "x and ", kname, " are bool; cast them to a number type first");
  user_check(!is_complex(t), is_complex(x->dtype) ? "x" : kname, " is ", dt(t),
             ": the window ops take real numbers only");
  return t;
}

void check_axis(const char* what, int64_t v, int64_t least) {
  user_check(v >= least, what, " must be at least ", least, ", got ", v);
}

// Output extent of a windowed dim; the window (dilated kernel) must fit in the padded input.
int64_t out_extent(int64_t n, int64_t span, int64_t pad, int64_t stride, const char* dim, const Shape& xs) {
  const int64_t room = n + 2 * pad - span;
  user_check(room >= 0, "a window of ", span, " does not fit in ", dim, " of size ", n, " plus padding ", pad,
             " (x has shape ", shape_str(xs), ")");
  return room / stride + 1;
}

}  // namespace

NodeRef pad(const NodeRef& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
            PadMode mode, const Operand& value) {
  user_check(value.weak, "value must be a number or boolean");
  const size_t r = x->shape.size();
  user_check(r >= 1, "cannot pad a scalar");
  user_check(before.size() == r && after.size() == r, "pads give ", before.size(),
             " dimensions but x has shape ", shape_str(x->shape));
  NodeRef y = x;
  for (size_t d = 0; d < r; ++d) {
    user_check(before[d] >= 0 && after[d] >= 0, "pads must not be negative, got ", before[d], " and ",
               after[d], " for dimension ", d + 1);
    if (before[d] > 0 || after[d] > 0) y = pad_dim(y, static_cast<int>(d), before[d], after[d], mode, value);
  }
  return y;
}

NodeRef pad(const NodeRef& x, const std::vector<int64_t>& before, const std::vector<int64_t>& after,
            PadMode mode, double value) {
  return pad(x, before, after, mode, Operand::number(value));
}

NodeRef roll(const NodeRef& x, int64_t shift, std::optional<int> dim) {
  if (!dim) {
    if (x->shape.empty()) return x;
    return reshape(roll(reshape(x, {numel(x->shape)}), shift, 0), x->shape);
  }
  const int d = *dim;
  const int64_t n = x->shape[d];
  if (n == 0) return x;  // nothing to move
  const int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x;
  // out = x[n-s ..] then x[.. n-s): the last s rows come first.
  return cat({narrow(x, d, n - s, s), narrow(x, d, 0, n - s)}, d);
}

NodeRef correlate(const NodeRef& x, const NodeRef& k, const std::vector<int64_t>& before,
                  const std::vector<int64_t>& after) {
  const size_t r = x->shape.size();
  internal_check(k->shape.size() == r && before.size() == r && after.size() == r);
  const DType t = window_dtype(x, k, "k");
  if (is_half(t))  // computed in f32, stored back
    return cast(correlate(cast(x, DType::F32), cast(k, DType::F32), before, after), t);
  Shape out(r);
  for (size_t d = 0; d < r; ++d) {
    // Each window must touch x: a block whose windows lie wholly in the padding would read
    // an empty slice.
    internal_check(before[d] < k->shape[d] && after[d] < k->shape[d]);
    out[d] =
        x->shape[d] == 0 ? 0 : x->shape[d] + before[d] + after[d] - k->shape[d] + 1;  // empty stays empty
    user_check(out[d] >= 1 || x->shape[d] == 0, "kernel ", shape_str(k->shape), " is larger than x ",
               shape_str(x->shape), " plus padding");
  }
  return op_node(Op::Correlate, {cast(x, t), cast(k, t)}, CorrelateAttrs{before, after}.encode(),
                 std::move(out), t);
}

NodeRef stencil(const NodeRef& x, const NodeRef& k, Boundary boundary) {
  const size_t r = x->shape.size();
  user_check(r >= 1, "x must have at least one dimension, got a scalar");
  user_check(k->shape.size() == r, "kernel k has shape ", shape_str(k->shape), " but x has shape ",
             shape_str(x->shape), " (ranks must match)");
  std::vector<int64_t> radius(r), zeros(r, 0);
  for (size_t d = 0; d < r; ++d) {
    user_check(k->shape[d] % 2 == 1, "kernel k has shape ", shape_str(k->shape),
               ": sizes must be odd so that it has a centre");
    radius[d] = k->shape[d] / 2;
  }
  window_dtype(x, k, "k");
  if (boundary == Boundary::Zero) return correlate(x, k, radius, radius);
  const PadMode m = boundary == Boundary::Periodic ? PadMode::Periodic : PadMode::Reflect;
  return correlate(pad(x, radius, radius, m, 0), k, zeros, zeros);
}

NodeRef conv2d(const NodeRef& x, const NodeRef& w, const Conv2dOptions& o) {
  user_check(x->shape.size() == 4, "x must be {N,C,H,W}, got shape ", shape_str(x->shape));
  user_check(w->shape.size() == 4, "w must be {O,C/groups,KH,KW}, got shape ", shape_str(w->shape));
  const DType t = window_dtype(x, w, "w");
  if (is_half(t)) return cast(conv2d(cast(x, DType::F32), cast(w, DType::F32), o), t);  // computed in f32
  const int64_t C = x->shape[1], O = w->shape[0], g = o.groups;
  check_axis("groups", g, 1);
  user_check(C % g == 0 && O % g == 0, "groups = ", g, " must divide the ", C, " input channels of x ",
             shape_str(x->shape), " and the ", O, " output channels of w ", shape_str(w->shape));
  user_check(w->shape[1] == C / g, "w has shape ", shape_str(w->shape), " but x ", shape_str(x->shape),
             " with groups = ", g, " needs ", C / g, " channels in w's dim 2");
  Shape out{x->shape[0], O, 0, 0};
  const char* names[2] = {"H", "W"};
  for (int i = 0; i < 2; ++i) {
    check_axis("stride", o.stride[i], 1);
    check_axis("dilation", o.dilation[i], 1);
    check_axis("padding", o.padding[i], 0);
    const int64_t span = o.dilation[i] * (w->shape[2 + i] - 1) + 1;
    user_check(o.padding[i] < span, "padding ", o.padding[i], " must be less than the dilated kernel ", span,
               " (w has shape ", shape_str(w->shape), ")");
    out[2 + i] = out_extent(x->shape[2 + i], span, o.padding[i], o.stride[i], names[i], x->shape);
  }
  const Conv2dAttrs a{
      {o.stride[0], o.stride[1]}, {o.padding[0], o.padding[1]}, {o.dilation[0], o.dilation[1]}, g};
  return op_node(Op::Conv2d, {cast(x, t), cast(w, t)}, a.encode(), std::move(out), t);
}

NodeRef pool2d(Op op, const NodeRef& x, const int64_t kernel[2], const int64_t stride[2],
               const int64_t padding[2]) {
  internal_check(op == Op::MaxPool2d || op == Op::AvgPool2d);
  user_check(x->shape.size() == 4, "x must be {N,C,H,W}, got shape ", shape_str(x->shape));
  user_check(x->dtype != DType::Bool, "x is bool; cast it to a number type first");
  user_check(!is_complex(x->dtype), "x is ", dt(x->dtype), ": the window ops take real numbers only");
  if (is_half(x->dtype)) return cast(pool2d(op, cast(x, DType::F32), kernel, stride, padding), x->dtype);
  const DType t = op == Op::AvgPool2d ? float_result(x->dtype) : x->dtype;
  Shape out{x->shape[0], x->shape[1], 0, 0};
  const char* names[2] = {"H", "W"};
  for (int i = 0; i < 2; ++i) {
    check_axis("kernel size", kernel[i], 1);
    check_axis("stride", stride[i], 1);
    check_axis("padding", padding[i], 0);
    user_check(2 * padding[i] <= kernel[i], "padding ", padding[i], " must be at most half the kernel size ",
               kernel[i]);
    out[2 + i] = out_extent(x->shape[2 + i], kernel[i], padding[i], stride[i], names[i], x->shape);
  }
  const PoolAttrs a{{kernel[0], kernel[1]}, {stride[0], stride[1]}, {padding[0], padding[1]}};
  return op_node(op, {cast(x, t)}, a.encode(), std::move(out), t);
}

}  // namespace tapestry::build
