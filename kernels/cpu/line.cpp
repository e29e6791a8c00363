// run_line: the ops over whole lines along one dim (scans, stable sort, the scatter-add of
// sort's gradient) and searchsorted. A line of `n` elements sits `inner` apart in a contiguous
// copy of the input; lines run in parallel.
#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/scan.hpp"

namespace tapestry::cpu {
namespace {

constexpr int64_t kSerialWork = 1 << 15;

// A contiguous view of v: v itself, or a copy held by `keep`.
View contiguous(const View& v, std::shared_ptr<Value>& keep) {
  if (v.is_contiguous()) return v;
  keep = Value::alloc(v.dtype, v.shape);
  copy_view(v, keep->view());
  return keep->view();
}

using scan::Lines;

// f(first element's offset, stride) for every line, in parallel.
template <class F> void for_lines(const Lines& L, F f) {
  const int64_t work = L.count() * L.n;
  const int64_t grain =
      work < kSerialWork ? L.count() : grain_for(L.count(), std::max<int64_t>(1, kSerialWork / L.n));
  parallel_for(L.count(), grain, [&](int64_t lo, int64_t hi, int) {
    for (int64_t l = lo; l < hi; ++l) f(L.start(l), L.inner);
  });
}

template <Op op, class T> void scan_lines(const T* x, T* y, const Lines& L, bool reverse) {
  for_lines(L, [&](int64_t b, int64_t s) {
    int64_t k = reverse ? L.n - 1 : 0;
    const int64_t step = reverse ? -1 : 1;
    T acc = x[b + k * s];
    y[b + k * s] = acc;
    for (int64_t i = 1; i < L.n; ++i) {
      k += step;
      acc = scan::ScanStep<op>{}(acc, x[b + k * s]);
      y[b + k * s] = acc;
    }
  });
}

template <class T> void logcumsumexp_lines(const T* x, T* y, const Lines& L, bool reverse) {
  for_lines(L, [&](int64_t b, int64_t s) {
    int64_t k = reverse ? L.n - 1 : 0;
    const int64_t step = reverse ? -1 : 1;
    double acc = static_cast<double>(x[b + k * s]);
    y[b + k * s] = static_cast<T>(acc);
    for (int64_t i = 1; i < L.n; ++i) {
      k += step;
      acc = scan::ScanStep<Op::Logcumsumexp>{}(acc, static_cast<double>(x[b + k * s]));
      y[b + k * s] = static_cast<T>(acc);
    }
  });
}

// The running extreme's values, or its 1-based indices.
template <bool Max, class T> void extreme_lines(const T* x, const View& out, const Lines& L, bool indices) {
  for_lines(L, [&](int64_t b, int64_t s) {
    scan::Extreme<T> acc{x[b], 0};
    for (int64_t i = 0; i < L.n; ++i) {
      if (i > 0) acc = scan::extreme_step<Max>(acc, x[b + i * s], i);
      if (indices) out.ptr<int64_t>()[b + i * s] = acc.at + 1;
      else out.ptr<T>()[b + i * s] = acc.v;
    }
  });
}

template <class T>
void sort_lines(const T* x, const View& out, const Lines& L, bool descending, bool indices) {
  for_lines(L, [&](int64_t b, int64_t s) {
    std::vector<int64_t> order(L.n);
    std::iota(order.begin(), order.end(), 0);
    auto at = [&](int64_t i) { return x[b + i * s]; };
    if (descending)
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t i, int64_t j) { return scan::less(at(j), at(i)); });
    else
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t i, int64_t j) { return scan::less(at(i), at(j)); });
    for (int64_t i = 0; i < L.n; ++i) {
      if (indices) out.ptr<int64_t>()[b + i * s] = order[i] + 1;
      else out.ptr<T>()[b + i * s] = at(order[i]);
    }
  });
}

// The first k of each line's stable sort (topk): out's lines are k long. A partial sort by a
// total order (the value's order, then the position) picks exactly the stable sort's first k.
template <class T>
void topk_lines(const T* x, const View& out, const Lines& L, const Lines& Lo, bool descending, bool indices) {
  const int64_t work = L.count() * L.n;
  const int64_t grain =
      work < kSerialWork ? L.count() : grain_for(L.count(), std::max<int64_t>(1, kSerialWork / L.n));
  parallel_for(L.count(), grain, [&](int64_t lo, int64_t hi, int) {
    std::vector<int64_t> order(L.n);
    for (int64_t l = lo; l < hi; ++l) {
      const int64_t b = L.start(l), s = L.inner, bo = Lo.start(l), so = Lo.inner;
      std::iota(order.begin(), order.end(), 0);
      auto before = [&](int64_t i, int64_t j) {
        const T xi = x[b + i * s], xj = x[b + j * s];
        if (descending ? scan::less(xj, xi) : scan::less(xi, xj)) return true;
        if (descending ? scan::less(xi, xj) : scan::less(xj, xi)) return false;
        return i < j;
      };
      std::partial_sort(order.begin(), order.begin() + Lo.n, order.end(), before);
      for (int64_t i = 0; i < Lo.n; ++i) {
        if (indices) out.ptr<int64_t>()[bo + i * so] = order[i] + 1;
        else out.ptr<T>()[bo + i * so] = x[b + order[i] * s];
      }
    }
  });
}

template <class T> void scatter_add_lines(const T* g, const int64_t* idx, T* y, const Lines& L) {
  for_lines(L, [&](int64_t b, int64_t s) {
    for (int64_t i = 0; i < L.n; ++i) y[b + i * s] = T(0);
    for (int64_t i = 0; i < L.n; ++i) {
      const int64_t k = idx[b + i * s] - 1;
      internal_check(k >= 0 && k < L.n);  // the indices come from sort or cummax
      y[b + k * s] += g[b + i * s];
    }
  });
}

template <class T> void searchsorted(const View& seq, const T* v, int64_t* out, int64_t count, bool right) {
  const int64_t n = seq.shape[0];
  const std::unique_ptr<T[]> a(new T[n]);  // not a vector: vector<bool> has no data()
  for (int64_t i = 0; i < n; ++i) a[i] = seq.ptr<T>()[i * seq.strides[0]];
  const int64_t grain = count < kSerialWork ? count : grain_for(count, 1024);
  parallel_for(count, grain, [&](int64_t lo, int64_t hi, int) {
    for (int64_t i = lo; i < hi; ++i) out[i] = scan::bound(a.get(), 1, n, v[i], right) + 1;
  });
}

}  // namespace

void run_line(Op op, const Attrs& attrs, const std::vector<View>& in, const View& out) {
  const LineAttrs a = attrs_of<LineAttrs>(op, attrs);
  internal_check(out.is_contiguous() && !in.empty());
  if (op == Op::Fft) return run_fft(in[0], out, static_cast<int>(a.dim), a.reverse);
  std::shared_ptr<Value> keep0, keep1;
  const View x = contiguous(in[0], keep0);
  if (op == Op::Searchsorted) {
    const View v = contiguous(in[1], keep1);
    internal_check(x.rank() == 1 && v.dtype == x.dtype && out.shape == v.shape && out.dtype == DType::I64);
    return dispatch_dtype(x.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      searchsorted<T>(x, v.ptr<T>(), out.ptr<int64_t>(), v.numel(), a.right);
    });
  }
  internal_check(a.dim >= 0 && a.dim < x.rank() && out.rank() == x.rank());
  const Lines L(x.shape, static_cast<int>(a.dim));
  if (op == Op::Sort && out.shape[a.dim] < x.shape[a.dim]) {  // topk: the first k of the sort
    Shape k_shape = x.shape;
    k_shape[a.dim] = out.shape[a.dim];
    internal_check(out.shape == k_shape);
    const Lines Lo(out.shape, static_cast<int>(a.dim));
    return dispatch_dtype(x.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      topk_lines(x.ptr<T>(), out, L, Lo, a.reverse, a.indices);
    });
  }
  internal_check(out.shape == x.shape);
  dispatch_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.ptr<T>();
    switch (op) {
      case Op::Cumsum:
      case Op::Cumprod:
        if constexpr (!std::is_same_v<T, bool>) {
          if (op == Op::Cumsum) return scan_lines<Op::Cumsum>(p, out.ptr<T>(), L, a.reverse);
          return scan_lines<Op::Cumprod>(p, out.ptr<T>(), L, a.reverse);
        }
        break;
      case Op::Logcumsumexp:
        if constexpr (std::is_floating_point_v<T>) return logcumsumexp_lines(p, out.ptr<T>(), L, a.reverse);
        break;
      case Op::Cummax: return extreme_lines<true>(p, out, L, a.indices);
      case Op::Cummin: return extreme_lines<false>(p, out, L, a.indices);
      case Op::Sort: return sort_lines(p, out, L, a.reverse, a.indices);
      case Op::LineScatterAdd:
        if constexpr (!std::is_same_v<T, bool>) {
          std::shared_ptr<Value> keep;
          const View idx = contiguous(in[1], keep);
          internal_check(idx.dtype == DType::I64 && idx.shape == x.shape);
          return scatter_add_lines(p, idx.ptr<int64_t>(), out.ptr<T>(), L);
        }
        break;
      default: break;
    }
    internal_fail(__FILE__, __LINE__, "run_line: not a line op for this dtype");
  });
}

}  // namespace tapestry::cpu
