// run_index: gather, scatter, scatter_add and nonzero over strided views.
// Index values are 1-based (negative from the end) and checked here, the only place they are
// known: an out-of-range value is a user error naming the function, the value and the dim.
#include <vector>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/strided.hpp"
#include "kernels/index.hpp"

namespace tapestry::cpu {
namespace {

// Calls f(offsets) for every element of `shape` in row-major order, with each view's element
// offset (strides in elements, so a broadcast view works too).
template <size_t K, class F>
void for_each_element(const Shape& shape, const std::array<const View*, K>& views, F&& f) {
  std::array<int64_t, K> off;
  for (size_t k = 0; k < K; ++k) off[k] = views[k]->offset;
  const int64_t n = numel(shape);
  std::vector<int64_t> at(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(off);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      for (size_t k = 0; k < K; ++k) off[k] += views[k]->strides[d];
      if (++at[d] < shape[d]) break;
      for (size_t k = 0; k < K; ++k) off[k] -= views[k]->strides[d] * shape[d];
      at[d] = 0;
    }
  }
}

template <class I> int64_t index_at(const View& index, int64_t off) {
  return static_cast<int64_t>(static_cast<const I*>(index.buf->data())[off]);
}

[[noreturn]] void out_of_range(IndexFn f, int64_t v, int dim, int64_t size, const View& x,
                               const View& index) {
  user_error(index_fn_name(f), ": index ", v, " is out of range for dim ", dim + 1, " of size ", size,
             " (valid: 1..", size, " or -", size, "..-1; x ", shape_str(x.shape), ", index ",
             shape_str(index.shape), ")");
}

// out[p] = x[p with dim = index[p]]: out has index's shape, x its shape but along dim.
template <class T, class I>
void gather(const IndexAttrs& a, const View& x, const View& index, const View& out) {
  const int64_t size = x.shape[a.dim], xs = x.strides[a.dim];
  View xr = x;  // x walked with index's shape: its dim contributes through the value alone
  xr.shape = index.shape;
  xr.strides[a.dim] = 0;
  const T* xp = static_cast<const T*>(x.buf->data());
  T* op = static_cast<T*>(out.buf->data());
  for_each_element<3>(index.shape, {&xr, &index, &out}, [&](const std::array<int64_t, 3>& o) {
    const int64_t v = index_at<I>(index, o[1]);
    const int64_t p = fn::index_position(v, size);
    if (p < 0) out_of_range(a.fn, v, a.dim, size, x, index);
    op[o[2]] = xp[o[0] + p * xs];
  });
}

// out = x, then out[p with dim = index[p]] (op)= src[p] in src's row-major order.
template <class T, class I, class Put>
void scatter(const IndexAttrs& a, const View& x, const View& index, const View& src, const View& out) {
  copy_view(x, out);
  const int64_t size = out.shape[a.dim], os = out.strides[a.dim];
  View orr = out;
  orr.shape = index.shape;
  orr.strides[a.dim] = 0;
  const T* sp = static_cast<const T*>(src.buf->data());
  T* op = static_cast<T*>(out.buf->data());
  for_each_element<3>(index.shape, {&orr, &index, &src}, [&](const std::array<int64_t, 3>& o) {
    const int64_t v = index_at<I>(index, o[1]);
    const int64_t p = fn::index_position(v, size);
    if (p < 0) out_of_range(a.fn, v, a.dim, size, x, index);
    Put{}(op[o[0] + p * os], sp[o[2]]);
  });
}

// The 1-based row-major positions of mask's true elements; out holds exactly that many.
void nonzero(const View& mask, const View& out) {
  internal_check(mask.dtype == DType::Bool && out.dtype == DType::I64 && out.is_contiguous());
  const bool* mp = static_cast<const bool*>(mask.buf->data());
  int64_t* op = out.ptr<int64_t>();
  const int64_t want = out.numel();
  int64_t k = 0, flat = 0;
  for_each_element<1>(mask.shape, {&mask}, [&](const std::array<int64_t, 1>& o) {
    ++flat;
    if (!mp[o[0]]) return;
    internal_check(k < want);  // the count was observed from this very mask
    op[k++] = flat;
  });
  internal_check(k == want);
}

template <class F> void with_index_type(DType t, F&& f) {
  if (t == DType::I32) return f(int32_t{});
  if (t == DType::I8) return f(int8_t{});
  if (t == DType::U8) return f(uint8_t{});
  internal_check(t == DType::I64);
  f(int64_t{});
}

}  // namespace

void run_index(Op op, const Attrs& attrs, const std::vector<View>& in, const View& out) {
  if (op == Op::Nonzero) return nonzero(in.at(0), out);
  const IndexAttrs a = IndexAttrs::decode(attrs);
  const View& x = in.at(0);
  const View& index = in.at(1);
  internal_check(x.dtype == out.dtype && x.rank() == index.rank() && a.dim < x.rank());
  dispatch_any_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_index_type(index.dtype, [&](auto itag) {
      using I = decltype(itag);
      switch (op) {
        case Op::Gather: return gather<T, I>(a, x, index, out);
        case Op::Scatter: return scatter<T, I, fn::ScatterSet>(a, x, index, in.at(2), out);
        case Op::ScatterAdd:
          // f16 and bf16 add in f32: the builders cast them (check_op_dtypes refuses them here).
          if constexpr (!std::is_same_v<T, f16> && !std::is_same_v<T, bf16>)
            return scatter<T, I, fn::ScatterAccumulate>(a, x, index, in.at(2), out);
          else unsupported_kernel_dtype(x.dtype);
        default: internal_fail(__FILE__, __LINE__, "run_index: not an index op");
      }
    });
  });
}

}  // namespace tapestry::cpu
