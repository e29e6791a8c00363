// The line math the CUDA kernels share with the CPU (kernels/scan.hpp, kernels/line_scan.hpp),
// tested here where there is no GPU: the sort's radix keys order exactly as scan::less (a
// stable radix sort of them is the CPU's stable sort, ascending and descending), scan::bound is
// std::lower_bound / upper_bound, and the chunked scans with carries, run thread by thread as
// line.cu runs them, give cpu::run_line's results (exactly for ints and cummax/cummin; floats to
// rounding, and bitwise with one chunk a line).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "engine/ir/attrs.hpp"
#include "helpers.hpp"
#include "kernels/line_scan.hpp"
#include "kernels/scan.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

template <class T> std::vector<T> probes() {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return {false, true};
  } else if constexpr (std::is_floating_point_v<T>) {
    return {T(0),
            -T(0),
            T(1),
            T(-2.5),
            T(3),
            L::infinity(),
            -L::infinity(),
            L::quiet_NaN(),
            -L::quiet_NaN(),
            L::max(),
            L::lowest(),
            L::denorm_min(),
            -L::denorm_min(),
            L::min(),
            T(-1)};
  } else {
    return {T(0), T(1), T(-1), T(7), L::max(), L::lowest(), T(L::max() - 1), T(L::lowest() + 1)};
  }
}

template <class T> void keys_order_as_less() {
  const std::vector<T> p = probes<T>();
  for (T a : p)
    for (T b : p) {
      const uint64_t ka = scan::order_key(a), kb = scan::order_key(b);
      CAPTURE(double(a));
      CAPTURE(double(b));
      CHECK((ka < kb) == scan::less(a, b));
      CHECK((ka == kb) == (!scan::less(a, b) && !scan::less(b, a)));
      const uint64_t da = scan::descending_key<T>(ka), db = scan::descending_key<T>(kb);
      CHECK((da < db) == scan::less(b, a));
      const uint64_t above = (ka | da) >> (scan::key_bits<T>() - 1) >> 1;  // past the radix sort's bits
      CHECK(above == 0);
    }
}

// Values with many ties, NaNs and signed zeros.
template <class T> std::vector<T> ragged(int n, int seed) {
  std::vector<T> v(n);
  const std::vector<T> p = probes<T>();
  for (int i = 0; i < n; ++i) {
    const int k = (i * 7919 + seed * 104729) % 97;
    v[i] = k < 30 ? p[k % p.size()] : T((k % 11) - 5);
  }
  return v;
}

template <class T> void stable_key_sort_is_stable_sort() {
  const std::vector<T> x = ragged<T>(300, 3);
  for (bool descending : {false, true}) {
    std::vector<int64_t> want(x.size()), got(x.size());
    std::iota(want.begin(), want.end(), 0);
    std::iota(got.begin(), got.end(), 0);
    std::stable_sort(want.begin(), want.end(), [&](int64_t i, int64_t j) {
      return descending ? scan::less(x[j], x[i]) : scan::less(x[i], x[j]);
    });
    auto key = [&](int64_t i) {
      const uint64_t k = scan::order_key(x[i]);
      return descending ? scan::descending_key<T>(k) : k;
    };
    std::stable_sort(got.begin(), got.end(), [&](int64_t i, int64_t j) { return key(i) < key(j); });
    CHECK(got == want);
  }
}

}  // namespace

TEST_CASE("kernels.scan.order_key_orders_as_less") {
  keys_order_as_less<bool>();
  keys_order_as_less<int8_t>();
  keys_order_as_less<uint8_t>();
  keys_order_as_less<int32_t>();
  keys_order_as_less<int64_t>();
  keys_order_as_less<float>();
  keys_order_as_less<double>();
}

TEST_CASE("kernels.scan.stable_key_sort_is_the_stable_sort") {
  stable_key_sort_is_stable_sort<bool>();
  stable_key_sort_is_stable_sort<int8_t>();
  stable_key_sort_is_stable_sort<uint8_t>();
  stable_key_sort_is_stable_sort<int32_t>();
  stable_key_sort_is_stable_sort<int64_t>();
  stable_key_sort_is_stable_sort<float>();
  stable_key_sort_is_stable_sort<double>();
}

TEST_CASE("kernels.scan.small_sort_is_the_stable_sort") {
  const std::vector<double> x = ragged<double>(64, 7);
  const std::vector<int32_t> xi = ragged<int32_t>(64, 8);
  for (int n = 0; n <= scan::kSmallSort; ++n)
    for (bool descending : {false, true}) {
      auto check_one = [&](const auto& v, int64_t stride) {
        std::vector<int> want(n), got(n);
        std::iota(want.begin(), want.end(), 0);
        std::stable_sort(want.begin(), want.end(), [&](int i, int j) {
          return descending ? scan::less(v[j * stride], v[i * stride])
                            : scan::less(v[i * stride], v[j * stride]);
        });
        scan::small_sort(v.data(), stride, n, descending, got.data());
        CAPTURE(n);
        CAPTURE(descending);
        CHECK(got == want);
      };
      check_one(x, 1);
      check_one(x, 2);  // strided: every other element
      check_one(xi, 1);
    }
}

TEST_CASE("kernels.scan.bound_is_lower_and_upper_bound") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> a = {-3, -1, -1, 0, 0, 2, 2, 2, 5, nan, nan};
  const std::vector<double> vs = {-4, -3, -1, -0.5, 0, 1, 2, 3, 5, 6, nan};
  for (int64_t n : {0, 1, 2, 5, 9, 11})
    for (double v : vs)
      for (bool right : {false, true}) {
        auto lt = [](double x, double y) { return scan::less(x, y); };
        const auto it = right ? std::upper_bound(a.begin(), a.begin() + n, v, lt)
                              : std::lower_bound(a.begin(), a.begin() + n, v, lt);
        CAPTURE(n);
        CAPTURE(v);
        CHECK(scan::bound(a.data(), 1, n, v, right) == it - a.begin());
      }
  // A strided sequence: every other element.
  std::vector<int32_t> s = {1, 99, 3, 99, 3, 99, 8, 99};
  CHECK(scan::bound(s.data(), 2, 4, 3, false) == 1);
  CHECK(scan::bound(s.data(), 2, 4, 3, true) == 3);
  CHECK(scan::bound(s.data(), 2, 4, 9, true) == 4);
}

namespace {

// line.cu's three passes, thread by thread (every pass finishes before the next, as kernels).
template <Op op, class T>
void chunked(const scan::ScanOf<op, T>& s, const T* x, void* out, const scan::ChunkedLines& C) {
  using State = typename scan::ScanOf<op, T>::State;
  const int64_t count = C.lines.count();
  std::vector<State> agg(count * C.chunks);
  for (int64_t t = 0; t < count * (C.chunks - 1); ++t)
    agg[t] = scan::chunk_total(s, x, C, t % count, t / count);
  for (int64_t l = 0; l < count; ++l) scan::chunk_carries(s, agg.data(), C, l);
  for (int64_t t = 0; t < C.threads(); ++t) {
    const int64_t c = t / count;
    scan::chunk_scan(s, x, out, C, t % count, c, c > 0 ? &agg[t] : nullptr);
  }
}

template <Op op, class T> void chunked_equals_run_line(bool reverse, bool indices) {
  const Shape shape{3, 257, 2};
  auto x = tensor<T>(shape, ragged<T>(3 * 257 * 2, 5));
  if constexpr (std::is_floating_point_v<T> && op != Op::Cummax && op != Op::Cummin) {
    // No overflow to infinity part way: a carry (the chunks' totals joined) would then differ
    // from the running sum by more than rounding.
    for (int64_t i = 0; i < x->view().numel(); ++i) {
      T& v = x->template data<T>()[i];
      if (std::isfinite(v) && std::fabs(v) > 1e6) v = T(1.5);
    }
  }
  if constexpr (op == Op::Cumprod) {  // keep products finite and integer products small
    for (int64_t i = 0; i < x->view().numel(); ++i) {
      const int64_t k = (i * 31) % 5;
      x->template data<T>()[i] = std::is_floating_point_v<T> ? T(0.5 + 0.25 * k) : T(k == 0 ? 1 : k - 2);
    }
  }
  for (int dim = 0; dim < 3; ++dim) {
    const DType out_t = indices ? DType::I64 : x->view().dtype;
    auto want = Value::alloc(out_t, shape);
    cpu::run_line(op, LineAttrs{dim, reverse, indices, false}.encode(), {x->view()}, want->view());
    const bool forward_only = op == Op::Cummax || op == Op::Cummin;
    scan::ScanOf<op, T> s;
    if constexpr (op == Op::Cummax || op == Op::Cummin) s.indices = indices;
    const scan::Lines L(shape, dim);
    // Every chunking: one chunk a line, the GPU's choice for a small tensor, and tiny chunks.
    for (int64_t threads : {int64_t(1), int64_t(1) << 16, int64_t(100000)})
      for (int64_t min_len : {int64_t(1), int64_t(7), int64_t(64)}) {
        const scan::ChunkedLines C = scan::chunk_lines(L, reverse && !forward_only, threads, min_len);
        CHECK(C.chunks * C.len >= L.n);
        CHECK((C.chunks - 1) * C.len < L.n);
        auto got = Value::alloc(out_t, shape);
        chunked(s, x->template data<T>(), got->view().byte_ptr(), C);
        CAPTURE(dim);
        CAPTURE(C.chunks);
        const bool exact = !std::is_floating_point_v<T> || forward_only || C.chunks == 1;
        dispatch_dtype(out_t, [&](auto tag) {
          using O = typename decltype(tag)::type;
          const O* w = want->template data<O>();
          const O* g = got->template data<O>();
          int bad = 0;
          for (int64_t i = 0; i < want->view().numel(); ++i) {
            bool ok;
            if constexpr (std::is_floating_point_v<O>)
              ok = std::memcmp(&w[i], &g[i], sizeof(O)) == 0 || (std::isnan(w[i]) && std::isnan(g[i])) ||
                   (!exact &&
                    std::fabs(double(w[i]) - double(g[i])) <= 1e-5 * std::max(1.0, std::fabs(double(w[i]))));
            else ok = w[i] == g[i];
            if (!ok && bad++ < 3)
              FAIL_CHECK("element " << i << ": cpu " << double(w[i]) << " chunked " << double(g[i]));
          }
        });
      }
  }
}

}  // namespace

TEST_CASE("kernels.scan.chunked_scans_equal_run_line") {
  for (bool reverse : {false, true}) {
    chunked_equals_run_line<Op::Cumsum, int32_t>(reverse, false);
    chunked_equals_run_line<Op::Cumsum, int64_t>(reverse, false);
    chunked_equals_run_line<Op::Cumsum, uint8_t>(reverse, false);
    chunked_equals_run_line<Op::Cumsum, double>(reverse, false);
    chunked_equals_run_line<Op::Cumsum, float>(reverse, false);
    chunked_equals_run_line<Op::Cumprod, int64_t>(reverse, false);
    chunked_equals_run_line<Op::Cumprod, double>(reverse, false);
    chunked_equals_run_line<Op::Logcumsumexp, double>(reverse, false);
    chunked_equals_run_line<Op::Logcumsumexp, float>(reverse, false);
  }
  for (bool indices : {false, true}) {
    chunked_equals_run_line<Op::Cummax, double>(false, indices);
    chunked_equals_run_line<Op::Cummin, float>(false, indices);
    chunked_equals_run_line<Op::Cummax, int32_t>(false, indices);
    chunked_equals_run_line<Op::Cummin, int8_t>(false, indices);
    chunked_equals_run_line<Op::Cummax, bool>(false, indices);
  }
}

TEST_CASE("kernels.scan.extreme_join_is_associative") {
  const std::vector<double> x = ragged<double>(60, 9);
  auto seq = [&](int64_t lo, int64_t hi) {
    scan::Extreme<double> acc{x[lo], lo};
    for (int64_t i = lo + 1; i < hi; ++i) acc = scan::extreme_step<true>(acc, x[i], i);
    return acc;
  };
  for (int64_t cut = 1; cut < 60; ++cut) {
    const auto whole = seq(0, 60), joined = scan::extreme_join<true>(seq(0, cut), seq(cut, 60));
    CHECK(whole.at == joined.at);
  }
}
