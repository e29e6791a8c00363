// run_line against naive references: scans, stable sort, scatter-add and searchsorted, along
// every dim of a strided (permuted) input; the shared scan functors on their edge values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/ir/attrs.hpp"
#include "helpers.hpp"
#include "kernels/scan.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Element k of line l of a row-major shape, along dim.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
  Lines(const Shape& s, int dim) {
    for (int d = 0; d < static_cast<int>(s.size()); ++d) (d < dim ? outer : d == dim ? n : inner) *= s[d];
  }
  int64_t at(int64_t l, int64_t k) const { return (l / inner * n + k) * inner + l % inner; }
};

std::vector<double> run(Op op, LineAttrs a, const std::vector<View>& in, DType out_t) {
  auto out = Value::alloc(out_t, in.back().shape);  // searchsorted: the values' shape
  cpu::run_line(op, a.encode(), in, out->view());
  std::vector<double> r;
  dispatch_dtype(out_t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < out->view().numel(); ++i) r.push_back(static_cast<double>(out->data<T>()[i]));
  });
  return r;
}

void same(const std::vector<double>& got, const std::vector<double>& want, double rtol = 0) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK_MESSAGE(close(got[i], want[i], rtol), i, ": ", got[i], " vs ", want[i]);
}

// A {4, 3, 5} f64 tensor with ties, seen through a permutation (so the kernel gets strides).
View input(std::shared_ptr<Value>& keep) {
  std::vector<double> v(60);
  for (int i = 0; i < 60; ++i) v[i] = static_cast<double>((i * 7) % 11 - 5) / 2;
  keep = tensor<double>({5, 4, 3}, v);
  return keep->view().permuted({1, 2, 0});  // {4, 3, 5}
}

}  // namespace

TEST_CASE("kernels.cpu.line.scans_match_naive") {
  std::shared_ptr<Value> keep;
  const View x = input(keep);
  const Elems<double> e = values<double>(x);
  for (int dim = 0; dim < 3; ++dim)
    for (bool rev : {false, true}) {
      CAPTURE(dim);
      CAPTURE(rev);
      const Lines L(x.shape, dim);
      std::vector<double> sum(60), prod(60), lse(60), mx(60), mxi(60), mn(60);
      for (int64_t l = 0; l < L.outer * L.inner; ++l) {
        double s = 0, p = 1, q = -kInf;
        for (int64_t j = 0; j < L.n; ++j) {
          const int64_t k = rev ? L.n - 1 - j : j, i = L.at(l, k);
          s += e[i], p *= e[i], q = std::log(std::exp(q) + std::exp(e[i]));
          sum[i] = s, prod[i] = p, lse[i] = q;
        }
        if (rev) continue;
        int64_t best = 0, worst = 0;
        for (int64_t k = 0; k < L.n; ++k) {
          if (e[L.at(l, k)] >= e[L.at(l, best)]) best = k;  // ties move to the later element
          if (e[L.at(l, k)] <= e[L.at(l, worst)]) worst = k;
          mx[L.at(l, k)] = e[L.at(l, best)], mxi[L.at(l, k)] = static_cast<double>(best + 1);
          mn[L.at(l, k)] = e[L.at(l, worst)];
        }
      }
      const LineAttrs a{dim, rev, false, false};
      same(run(Op::Cumsum, a, {x}, DType::F64), sum, 1e-12);
      same(run(Op::Cumprod, a, {x}, DType::F64), prod, 1e-12);
      same(run(Op::Logcumsumexp, a, {x}, DType::F64), lse, 1e-12);
      if (rev) continue;
      same(run(Op::Cummax, a, {x}, DType::F64), mx);
      same(run(Op::Cummax, LineAttrs{dim, false, true, false}, {x}, DType::I64), mxi);
      same(run(Op::Cummin, a, {x}, DType::F64), mn);
    }
}

TEST_CASE("kernels.cpu.line.sort_is_stable_and_scatter_inverts_it") {
  std::shared_ptr<Value> keep;
  const View x = input(keep);
  const Elems<double> e = values<double>(x);
  for (int dim = 0; dim < 3; ++dim)
    for (bool desc : {false, true}) {
      CAPTURE(dim);
      CAPTURE(desc);
      const Lines L(x.shape, dim);
      std::vector<double> vals(60), idx(60);
      for (int64_t l = 0; l < L.outer * L.inner; ++l) {
        std::vector<int64_t> order(L.n);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
          const double a = e[L.at(l, i)], b = e[L.at(l, j)];
          return desc ? a > b : a < b;
        });
        for (int64_t k = 0; k < L.n; ++k)
          vals[L.at(l, k)] = e[L.at(l, order[k])], idx[L.at(l, k)] = order[k] + 1;
      }
      same(run(Op::Sort, LineAttrs{dim, desc, false, false}, {x}, DType::F64), vals);
      const std::vector<double> got = run(Op::Sort, LineAttrs{dim, desc, true, false}, {x}, DType::I64);
      same(got, idx);
      // Scattering the sorted values back to their indices gives x again.
      std::vector<int64_t> gi(got.begin(), got.end());
      auto iv = tensor<int64_t>(x.shape, gi);
      auto sv = tensor<double>(x.shape, vals);
      std::vector<double> xs(60);
      for (int64_t i = 0; i < 60; ++i) xs[i] = e[i];
      same(run(Op::LineScatterAdd, LineAttrs{dim, false, false, false}, {sv->view(), iv->view()}, DType::F64),
           xs);
    }
}

// A Sort whose out line is k long (topk): the first k of the stable sort, values and indices,
// along every dim of the strided input (ties everywhere), for every k, either direction, and a
// line with NaNs (last ascending, first descending).
TEST_CASE("kernels.cpu.line.topk_is_the_sorts_first_k") {
  std::shared_ptr<Value> keep;
  const View x = input(keep);
  auto first_k = [](const std::vector<double>& full, const Shape& s, int dim, int64_t k) {
    const Lines L(s, dim);
    Shape ks = s;
    ks[dim] = k;
    const Lines Lk(ks, dim);
    std::vector<double> r(static_cast<size_t>(Lk.outer * Lk.n * Lk.inner));
    for (int64_t l = 0; l < L.outer * L.inner; ++l)
      for (int64_t j = 0; j < k; ++j) r[Lk.at(l, j)] = full[L.at(l, j)];
    return r;
  };
  auto run_k = [](const View& in, LineAttrs a, int64_t k, DType t) {
    Shape s = in.shape;
    s[a.dim] = k;
    auto out = Value::alloc(t, s);
    cpu::run_line(Op::Sort, a.encode(), {in}, out->view());
    std::vector<double> r;
    for (int64_t i = 0; i < out->view().numel(); ++i)
      r.push_back(t == DType::I64 ? static_cast<double>(out->data<int64_t>()[i]) : out->data<double>()[i]);
    return r;
  };
  for (int dim = 0; dim < 3; ++dim)
    for (bool desc : {false, true})
      for (int64_t k = 1; k < x.shape[dim]; ++k) {
        CAPTURE(dim);
        CAPTURE(desc);
        CAPTURE(k);
        const LineAttrs v{dim, desc, false, false}, i{dim, desc, true, false};
        same(run_k(x, v, k, DType::F64), first_k(run(Op::Sort, v, {x}, DType::F64), x.shape, dim, k));
        same(run_k(x, i, k, DType::I64), first_k(run(Op::Sort, i, {x}, DType::I64), x.shape, dim, k));
      }
  auto nan_line = tensor<double>({7}, {2, kNaN, -1, kNaN, 2, kInf, -kInf});
  for (bool desc : {false, true}) {
    const LineAttrs i{0, desc, true, false};
    same(run_k(nan_line->view(), i, 4, DType::I64),
         first_k(run(Op::Sort, i, {nan_line->view()}, DType::I64), {7}, 0, 4));
  }
}

TEST_CASE("kernels.cpu.line.nan_and_infinities") {
  auto x = tensor<double>({5}, {2, kNaN, -1, kNaN, 0});
  same(run(Op::Sort, LineAttrs{0, false, true, false}, {x->view()}, DType::I64), {3, 5, 1, 2, 4});
  same(run(Op::Sort, LineAttrs{0, true, true, false}, {x->view()}, DType::I64), {2, 4, 1, 5, 3});
  same(run(Op::Cummax, LineAttrs{0, false, false, false}, {x->view()}, DType::F64),
       {2, kNaN, kNaN, kNaN, kNaN});
  same(run(Op::Cummax, LineAttrs{0, false, true, false}, {x->view()}, DType::I64), {1, 2, 2, 2, 2});
  same(run(Op::Cumsum, LineAttrs{0, false, false, false}, {x->view()}, DType::F64),
       {2, kNaN, kNaN, kNaN, kNaN});
  // logaddexp: -inf is the identity; inf + inf stays inf, and a NaN spreads.
  const scan::ScanStep<Op::Logcumsumexp> lae;
  CHECK(lae(-kInf, 1.5) == 1.5);
  CHECK(lae(-kInf, -kInf) == -kInf);
  CHECK(lae(kInf, kInf) == kInf);
  CHECK(std::isnan(lae(kNaN, 0)));
  CHECK(lae(1000, 1000) == doctest::Approx(1000 + std::log(2.0)));
  CHECK(lae(0, -800) == 0);
  CHECK(scan::less(1.0, kNaN));
  CHECK_FALSE(scan::less(kNaN, 1.0));
  CHECK(scan::takes_over<true>(1, 1));  // a tie moves to the later element
  CHECK_FALSE(scan::takes_over<true>(kNaN, 5.0));
}

TEST_CASE("kernels.cpu.line.searchsorted") {
  auto seq = tensor<double>({5}, {1, 2, 2, 3, kNaN});
  auto v = tensor<double>({2, 3}, {0, 2, 2.5, 3, 4, kNaN});
  same(run(Op::Searchsorted, LineAttrs{0, false, false, false}, {seq->view(), v->view()}, DType::I64),
       {1, 2, 4, 4, 5, 5});
  same(run(Op::Searchsorted, LineAttrs{0, false, false, true}, {seq->view(), v->view()}, DType::I64),
       {1, 4, 4, 5, 5, 6});
  auto iseq = tensor<int32_t>({4}, {-3, 0, 0, 7});
  auto iv = tensor<int32_t>({3}, {0, 8, -9});
  same(run(Op::Searchsorted, LineAttrs{0, false, false, false}, {iseq->view(), iv->view()}, DType::I64),
       {2, 5, 1});
}
