// Shape builders: reshape, permute, expand, squeeze/unsqueeze, flatten, slices, cat, stack
// (split from builders.cpp; the contract is builders.hpp).
#include <algorithm>
#include <numeric>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/empty.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

// --- shape ----------------------------------------------------------------------------

NodeRef reshape(const NodeRef& x, Shape shape) {
  user_check(shape.size() <= static_cast<size_t>(kMaxDims), "a shape of ", shape.size(),
             " dims; a tensor has at most ", kMaxDims);
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      user_check(infer < 0, "only one -1 is allowed in the shape, got ", shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      // Not user_check: its message (shape_str) would be built on every call.
      if (shape[i] < 0) user_error("sizes must be at least 0 (or one -1), got ", shape_str(shape));
      if (shape[i] > 0 && known > (int64_t{1} << 50) / shape[i])
        user_error("shape ", shape_str(shape), " is too large (more than 2^50 elements)");
      known *= shape[i];
    }
  }
  const int64_t n = numel(x->shape);
  if (infer >= 0) {
    // As numpy: the other sizes must say what -1 is, which a 0 among them does not.
    user_check(known > 0, "cannot reshape ", shape_str(x->shape), " (", n, " elements) to ", shape_str(shape),
               ": the -1 is ambiguous next to a size 0");
    user_check(n % known == 0, "cannot reshape ", shape_str(x->shape), " (", n, " elements) to ",
               shape_str(shape));
    shape[infer] = n / known;
  }
  if (numel(shape) != n)
    user_error("cannot reshape ", shape_str(x->shape), " (", n, " elements) to ", shape_str(shape), " (",
               numel(shape), " elements)");
  if (shape == x->shape) return x;
  // reshape(reshape(y)) == reshape(y): keeps loop bodies structurally equal. Not through a
  // computed reshape: y may have no value, and `p = tp.eval(A:matmul(p))` would then recompute
  // every earlier step each iteration (a matmul chain as long as the loop).
  const bool computed = x->value || x->stored;
  const NodeRef& src = x->op == Op::Reshape && !computed ? x->inputs[0] : x;
  if (src->shape == shape) return src;
  return op_node(Op::Reshape, {src}, Attrs{}, std::move(shape), x->dtype);
}

NodeRef permute(const NodeRef& x, const std::vector<int>& perm) {
  const int r = static_cast<int>(x->shape.size());
  user_check(static_cast<int>(perm.size()) == r, "expects a permutation of ", r,
             " dimensions for a tensor of shape ", shape_str(x->shape), ", got ", perm.size());
  std::vector<bool> seen(r, false);
  bool identity = true;
  Shape out(r);
  for (int i = 0; i < r; ++i) {
    internal_check(perm[i] >= 0 && perm[i] < r);
    user_check(!seen[perm[i]], "dimension ", perm[i] + 1, " appears twice in the permutation");
    seen[perm[i]] = true;
    identity = identity && perm[i] == i;
    out[i] = x->shape[perm[i]];
  }
  if (identity) return x;
  return op_node(Op::Permute, {x}, PermuteAttrs{perm}.encode(), std::move(out), x->dtype);
}

NodeRef transpose(const NodeRef& x, int d1, int d2) {
  std::vector<int> perm(x->shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[d1], perm[d2]);
  return permute(x, perm);
}

NodeRef expand(const NodeRef& x, Shape shape) {
  const size_t r = shape.size(), xr = x->shape.size();
  user_check(r <= static_cast<size_t>(kMaxDims), "a shape of ", r, " dims; a tensor has at most ", kMaxDims);
  user_check(r >= xr, "cannot expand ", shape_str(x->shape), " to fewer dimensions: ", shape_str(shape));
  for (size_t i = 0; i < r; ++i) {
    if (shape[i] == -1) {
      user_check(i >= r - xr, "-1 is only allowed for existing dimensions, got ", shape_str(shape));
      shape[i] = x->shape[i - (r - xr)];
    }
  }
  check_shape(shape, "shape");
  user_check(broadcastable_to(x->shape, shape), "cannot expand ", shape_str(x->shape), " to ",
             shape_str(shape), " (only size-1 dimensions expand)");
  return broadcast_to(x, shape);
}

NodeRef broadcast_to(const NodeRef& x, const Shape& shape) {
  if (x->shape == shape) return x;
  internal_check(broadcastable_to(x->shape, shape));
  if (x->op == Op::Full) {  // a constant of any shape is still a constant
    return make_node(Op::Full, {}, x->attrs, shape, x->dtype);
  }
  return op_node(Op::Expand, {x}, Attrs{}, shape, x->dtype);
}

NodeRef squeeze(const NodeRef& x, std::optional<int> dim) {
  Shape out;
  if (dim) {
    user_check(x->shape[*dim] == 1, "dimension ", *dim + 1, " of ", shape_str(x->shape), " has size ",
               x->shape[*dim], ", not 1");
    out = x->shape;
    out.erase(out.begin() + *dim);
  } else {
    for (int64_t d : x->shape)
      if (d != 1) out.push_back(d);
  }
  return reshape(x, out);
}

NodeRef unsqueeze(const NodeRef& x, int dim) {
  internal_check(dim >= 0 && dim <= static_cast<int>(x->shape.size()));
  Shape out = x->shape;
  out.insert(out.begin() + dim, 1);
  return reshape(x, out);
}

NodeRef flatten(const NodeRef& x, int first, int last) {
  if (x->shape.empty()) return reshape(x, {1});
  user_check(first <= last, "first dimension ", first + 1, " is after last dimension ", last + 1);
  Shape out(x->shape.begin(), x->shape.begin() + first);
  int64_t n = 1;
  for (int d = first; d <= last; ++d) n *= x->shape[d];
  out.push_back(n);
  out.insert(out.end(), x->shape.begin() + last + 1, x->shape.end());
  return reshape(x, out);
}

namespace {

// A slice of a file not yet read is a smaller box of the file: only it is read (a strided
// slice reads its bounding box, then steps through it).
NodeRef slice_of_load(const NodeRef& x, const std::vector<int64_t>& start, const std::vector<int64_t>& step,
                      const Shape& count) {
  LoadAttrs a = attrs_of<LoadAttrs>(*x);
  Shape box(count.size());
  std::vector<int64_t> inner_start(count.size());
  bool unit = true;
  for (size_t d = 0; d < count.size(); ++d) {
    const int64_t last = start[d] + (count[d] - 1) * step[d];
    const int64_t lo = std::min(start[d], last);
    box[d] = std::max(start[d], last) - lo + 1;
    a.origin[d] += lo;
    inner_start[d] = start[d] - lo;
    unit = unit && step[d] == 1;
  }
  NodeRef sub = make_node(Op::Load, {}, a.encode(), box, x->dtype);
  if (unit) return sub;
  return op_node(Op::Slice, {sub}, SliceAttrs{std::move(inner_start), step}.encode(), count, x->dtype);
}

}  // namespace

NodeRef slice(const NodeRef& x, std::vector<int64_t> start, std::vector<int64_t> step, Shape count) {
  const size_t r = x->shape.size();
  internal_check(start.size() == r && step.size() == r && count.size() == r);
  bool whole = true;
  for (size_t d = 0; d < r; ++d) {
    user_check(step[d] != 0, "step must not be zero");
    user_check(count[d] >= 0, "negative count in dimension ", d + 1);
    const int64_t last = start[d] + (count[d] - 1) * step[d];
    user_check(count[d] == 0 || (start[d] >= 0 && start[d] < x->shape[d] && last >= 0 && last < x->shape[d]),
               "range out of bounds in dimension ", d + 1, " of ", shape_str(x->shape));
    whole = whole && start[d] == 0 && step[d] == 1 && count[d] == x->shape[d];
  }
  if (whole) return x;
  if (is_empty(count)) return full(count, 0, x->dtype);  // selects nothing
  if (x->op == Op::Load && !x->value && !x->stored) return slice_of_load(x, start, step, count);
  return op_node(Op::Slice, {x}, SliceAttrs{std::move(start), std::move(step)}.encode(), std::move(count),
                 x->dtype);
}

NodeRef narrow(const NodeRef& x, int dim, int64_t first, int64_t len) {
  const int64_t size = x->shape[dim];
  user_check(len >= 0, "length must be at least 0, got ", len);
  user_check(first >= 0 && first + len <= size, "range ", first + 1, "..", first + len,
             " is out of bounds for dimension ", dim + 1, " of size ", size, " (shape ", shape_str(x->shape),
             ")");
  std::vector<int64_t> start(x->shape.size(), 0), step(x->shape.size(), 1);
  Shape count = x->shape;
  start[dim] = first;
  count[dim] = len;
  return slice(x, start, step, count);
}

NodeRef select(const NodeRef& x, int dim, int64_t index) {
  const int64_t size = x->shape[dim];
  user_check(index >= 0 && index < size, "index ", index + 1, " is out of bounds for dimension ", dim + 1,
             " of size ", size, " (shape ", shape_str(x->shape), ")");
  return squeeze(narrow(x, dim, index, 1), dim);
}

NodeRef cat(const std::vector<NodeRef>& xs, int dim) {
  user_check(!xs.empty(), "expects at least one tensor");
  const Shape& s0 = xs[0]->shape;
  DType t = xs[0]->dtype;
  Shape out = s0;
  out[dim] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Shape& s = xs[i]->shape;
    user_check(s.size() == s0.size(), "tensor ", i + 1, " has shape ", shape_str(s), " but tensor 1 has ",
               shape_str(s0), " (ranks differ)");
    for (size_t d = 0; d < s.size(); ++d)
      user_check(static_cast<int>(d) == dim || s[d] == s0[d], "tensor ", i + 1, " has shape ", shape_str(s),
                 " but tensor 1 has ", shape_str(s0), " (dimension ", d + 1, " differs)");
    out[dim] += s[dim];
    t = promote(t, xs[i]->dtype);
  }
  // Parts with nothing along dim add nothing (numpy); an empty result folds in op_node.
  std::vector<NodeRef> ins;
  for (const NodeRef& x : xs)
    if (x->shape[dim] > 0 || is_empty(out)) ins.push_back(cast(x, t));
  if (ins.empty()) return full(out, 0, t);
  if (ins.size() == 1) return ins[0];
  return op_node(Op::Cat, std::move(ins), CatAttrs{dim}.encode(), std::move(out), t);
}

NodeRef stack(const std::vector<NodeRef>& xs, int dim) {
  user_check(!xs.empty(), "expects at least one tensor");
  std::vector<NodeRef> ys;
  for (size_t i = 0; i < xs.size(); ++i) {
    user_check(xs[i]->shape == xs[0]->shape, "tensor ", i + 1, " has shape ", shape_str(xs[i]->shape),
               " but tensor 1 has ", shape_str(xs[0]->shape));
    ys.push_back(unsqueeze(xs[i], dim));
  }
  return cat(ys, dim);
}

}  // namespace tapestry::build
