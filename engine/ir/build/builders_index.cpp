// Builders for indexing: gather and scatter are ops (Index kind); index_select, take, the
// masked reads and writes and where(cond)'s indices are compositions of them.
//   NodeRef y = build::gather(x, 1, idx);                 // y[i][j] = x[i][idx[i][j]]
//   NodeRef z = build::masked_select(x, mask, count);     // count: mask's true elements
// dims are 0-based; index values are 1-based (negative from the end) and checked by the
// kernels, since only the data knows them.
#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/empty.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::build {

namespace {

void check_index_dtype(const NodeRef& index, const char* what) {
  user_check(is_int(index->dtype), what, " must be an integer tensor (i8, u8, i32 or i64), got ",
             dtype_name(index->dtype), " ", shape_str(index->shape));
}

void check_rank(const NodeRef& x, const NodeRef& t, const char* what) {
  user_check(!x->shape.empty(), "x must have at least 1 dim, got a scalar");
  user_check(t->shape.size() == x->shape.size(), what, " must have x's number of dims (", x->shape.size(),
             "), got ", shape_str(t->shape), " for x ", shape_str(x->shape));
}

// The first `count` elements of x along every dim (a view), or x when it is that already.
NodeRef head(const NodeRef& x, const Shape& count) {
  if (count == x->shape) return x;
  return slice(x, std::vector<int64_t>(count.size(), 0), std::vector<int64_t>(count.size(), 1), count);
}

// torch refuses any index into a dim of size 0: no value is in range.
void check_not_into_empty(const NodeRef& x, int dim, const NodeRef& index) {
  user_check(x->shape[dim] > 0 || numel(index->shape) == 0, "index ", shape_str(index->shape),
             " points into dim ", dim + 1, " of x ", shape_str(x->shape), ", which is empty");
}

Shape with_dim(Shape s, int dim, int64_t n) {
  s[dim] = n;
  return s;
}

}  // namespace

NodeRef gather(const NodeRef& x, int dim, const NodeRef& index, IndexFn fn) {
  check_index_dtype(index, "index");
  check_rank(x, index, "index");
  for (size_t d = 0; d < x->shape.size(); ++d)
    user_check(static_cast<int>(d) == dim || index->shape[d] <= x->shape[d], "index ",
               shape_str(index->shape), " is larger than x ", shape_str(x->shape), " in dim ", d + 1,
               " (only dim ", dim + 1, " is indexed)");
  check_not_into_empty(x, dim, index);
  // torch reads x at the index's own coordinates in the other dims: the slice of x they cover.
  const NodeRef xs = head(x, with_dim(index->shape, dim, x->shape[dim]));
  return op_node(Op::Gather, {xs, index}, IndexAttrs{dim, fn}.encode(), index->shape, x->dtype);
}

NodeRef scatter(Op op, const NodeRef& x, int dim, const NodeRef& index, const Operand& src, IndexFn fn) {
  internal_check(op == Op::Scatter || op == Op::ScatterAdd);
  check_index_dtype(index, "index");
  check_rank(x, index, "index");
  user_check(op != Op::ScatterAdd || x->dtype != DType::Bool, "x must be numeric, got bool ",
             shape_str(x->shape));
  if (op == Op::ScatterAdd && is_half(x->dtype)) {  // added in f32, stored back
    const Operand s32 = src.weak ? src : Operand(cast(src.node, DType::F32));
    return cast(scatter(op, cast(x, DType::F32), dim, index, s32, fn), x->dtype);
  }
  for (size_t d = 0; d < x->shape.size(); ++d)
    user_check(static_cast<int>(d) == dim || index->shape[d] <= x->shape[d], "index ",
               shape_str(index->shape), " is larger than x ", shape_str(x->shape), " in dim ", d + 1,
               " (only dim ", dim + 1, " is indexed)");
  check_not_into_empty(x, dim, index);
  NodeRef s;
  if (src.weak) {  // torch's scatter(value=): one number everywhere the index points
    s = broadcast_to(scalar(src, x->dtype), index->shape);
  } else {
    check_rank(x, src.node, "src");
    for (size_t d = 0; d < index->shape.size(); ++d)
      user_check(src.node->shape[d] >= index->shape[d], "src ", shape_str(src.node->shape),
                 " is smaller than index ", shape_str(index->shape), " in dim ", d + 1,
                 " (src needs a value for every index)");
    s = head(src.node, index->shape);
    if (s->dtype != x->dtype) s = cast(s, x->dtype);
  }
  // The index covers a corner of x in the other dims: scatter into that corner, keep the rest.
  const Shape corner = with_dim(index->shape, dim, x->shape[dim]);
  const NodeRef part =
      op_node(op, {head(x, corner), index, s}, IndexAttrs{dim, fn}.encode(), corner, x->dtype);
  if (corner == x->shape) return part;
  return write_region(x, std::vector<int64_t>(corner.size(), 0), corner, part);
}

NodeRef index_select(const NodeRef& x, int dim, const NodeRef& index, IndexFn fn) {
  check_index_dtype(index, "index");
  user_check(index->shape.size() <= 1, "index must be 1-D, got ", shape_str(index->shape));
  user_check(!x->shape.empty(), "x must have at least 1 dim, got a scalar");
  const int64_t n = index->shape.empty() ? 1 : index->shape[0];
  Shape one(x->shape.size(), 1);
  one[dim] = n;
  // The index as {1,..,n,..,1} broadcast to the output: a gather along dim.
  const Shape out = with_dim(x->shape, dim, n);
  return gather(x, dim, expand(reshape(index, one), out), fn);
}

NodeRef take(const NodeRef& x, const NodeRef& index, IndexFn fn) {
  check_index_dtype(index, "index");
  const int64_t n = numel(index->shape);
  const NodeRef flat = gather(reshape(x, {numel(x->shape)}), 0, reshape(index, {n}), fn);
  return reshape(flat, index->shape);
}

NodeRef index_tensor(const NodeRef& x, int dim, const NodeRef& index, IndexFn fn) {
  check_index_dtype(index, "index");
  const NodeRef picked = index_select(x, dim, reshape(index, {numel(index->shape)}), fn);
  Shape out(x->shape.begin(), x->shape.begin() + dim);
  out.insert(out.end(), index->shape.begin(), index->shape.end());
  out.insert(out.end(), x->shape.begin() + dim + 1, x->shape.end());
  return reshape(picked, out);
}

NodeRef nonzero(const NodeRef& mask, int64_t count) {
  check_shape({count}, "the count of true elements");
  const NodeRef m = mask->dtype == DType::Bool ? mask : binary(Op::Ne, mask, Operand::integer_number(0));
  return op_node(Op::Nonzero, {m}, Attrs{}, {count}, DType::I64);
}

std::vector<NodeRef> unravel(const NodeRef& flat, const Shape& shape) {
  std::vector<NodeRef> out;
  if (numel(shape) == 0) {  // no position exists in an empty tensor: flat is empty too
    for (size_t d = 0; d < shape.size(); ++d) out.push_back(full(flat->shape, 0, flat->dtype));
    return out;
  }
  const NodeRef zero_based = binary(Op::Sub, flat, Operand::integer_number(1));
  int64_t stride = numel(shape);
  for (int64_t size : shape) {
    stride /= size;
    const NodeRef q = binary(Op::FloorDiv, zero_based, Operand::integer_number(stride));
    out.push_back(
        binary(Op::Add, binary(Op::Mod, q, Operand::integer_number(size)), Operand::integer_number(1)));
  }
  return out;
}

// x's leading dims that the mask covers must be the mask's shape (numpy's boolean index).
static void check_mask(const NodeRef& x, const NodeRef& mask) {
  bool ok = mask->shape.size() <= x->shape.size();
  for (size_t d = 0; ok && d < mask->shape.size(); ++d) ok = mask->shape[d] == x->shape[d];
  user_check(ok, "mask ", shape_str(mask->shape), " must match the leading dims of x ", shape_str(x->shape));
}

// x reshaped to {elements the mask covers, the remaining dims...}.
static NodeRef rows_of(const NodeRef& x, size_t mask_rank) {
  Shape rows{numel(Shape(x->shape.begin(), x->shape.begin() + mask_rank))};
  rows.insert(rows.end(), x->shape.begin() + mask_rank, x->shape.end());
  return reshape(x, rows);
}

NodeRef masked_select(const NodeRef& x, const NodeRef& mask, int64_t count) {
  check_mask(x, mask);
  return index_select(rows_of(x, mask->shape.size()), 0, nonzero(mask, count), IndexFn::Subscript);
}

NodeRef masked_fill(const NodeRef& x, const NodeRef& mask, const Operand& value) {
  check_mask(x, mask);
  NodeRef m = mask->dtype == DType::Bool ? mask : binary(Op::Ne, mask, Operand::integer_number(0));
  while (m->shape.size() < x->shape.size()) m = unsqueeze(m, static_cast<int>(m->shape.size()));
  NodeRef v = value.weak ? scalar(value, x->dtype) : value.node;
  if (v->dtype != x->dtype) v = cast(v, x->dtype);
  return where(m, v, x);
}

NodeRef masked_scatter(const NodeRef& x, const NodeRef& mask, const NodeRef& value, int64_t count) {
  check_mask(x, mask);
  const NodeRef rows = rows_of(x, mask->shape.size());
  Shape selected = rows->shape;
  selected[0] = count;
  user_check(broadcastable_to(value->shape, selected), "value ", shape_str(value->shape),
             " cannot be broadcast to the ", count, " selected elements ", shape_str(selected), " of x ",
             shape_str(x->shape));
  Shape one(rows->shape.size(), 1);
  one[0] = count;
  const NodeRef idx = expand(reshape(nonzero(mask, count), one), selected);
  return reshape(scatter(Op::Scatter, rows, 0, idx, broadcast_to(value, selected), IndexFn::MaskedWrite),
                 x->shape);
}

NodeRef index_put(const NodeRef& x, int dim, const NodeRef& index, const Operand& value) {
  check_index_dtype(index, "index");
  user_check(index->shape.size() <= 1, "index must be 1-D, got ", shape_str(index->shape));
  const int64_t n = numel(index->shape);
  const Shape selected = with_dim(x->shape, dim, n);
  NodeRef v = value.weak ? scalar(value, x->dtype) : value.node;
  user_check(broadcastable_to(v->shape, selected), "value ", shape_str(v->shape),
             " cannot be broadcast to the ", n, " indexed slices ", shape_str(selected), " of x ",
             shape_str(x->shape));
  if (v->dtype != x->dtype) v = cast(v, x->dtype);
  Shape one(x->shape.size(), 1);
  one[dim] = n;
  const NodeRef idx = expand(reshape(index, one), selected);
  return scatter(Op::Scatter, x, dim, idx, broadcast_to(v, selected), IndexFn::MaskedWrite);
}

}  // namespace tapestry::build
