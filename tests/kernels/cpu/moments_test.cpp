// run_moments (one-pass count, sum, mean, centred sum of squares) against a two-pass reference
// in long double: awkward data (large mean, small spread), chunk edges, rows, f64, NaN and inf,
// and independence from the thread count.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

#include "helpers.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

struct Ref {
  long double sum = 0, mean = 0, m2 = 0;
};

template <class T> Ref two_pass(const T* p, int64_t n) {
  Ref r;
  for (int64_t i = 0; i < n; ++i) r.sum += p[i];
  r.mean = r.sum / n;
  for (int64_t i = 0; i < n; ++i) r.m2 += (p[i] - r.mean) * (p[i] - r.mean);
  return r;
}

std::vector<cpu::Moments> moments(const std::shared_ptr<Value>& v, int64_t rows) {
  std::vector<cpu::Moments> out(static_cast<size_t>(rows));
  cpu::run_moments(v->view(), rows, out.data());
  return out;
}

template <class T> void check_rows(const std::shared_ptr<Value>& v, int64_t rows, double rtol) {
  const int64_t len = v->view().numel() / rows;
  const auto got = moments(v, rows);
  for (int64_t r = 0; r < rows; ++r) {
    CAPTURE(r);
    const Ref want = two_pass(v->data<T>() + r * len, len);
    CHECK(got[r].count == len);
    CHECK(std::abs(got[r].sum - double(want.sum)) <=
          rtol * (std::abs(double(want.sum)) + len * 1e-30) + 1e-9);
    CHECK(std::abs(got[r].mean() - double(want.mean)) <= rtol * std::abs(double(want.mean)) + 1e-12);
    CHECK(std::abs(got[r].m2 - double(want.m2)) <= rtol * double(want.m2));
  }
}

template <class T> std::shared_ptr<Value> normal(int64_t n, double mean, double sd, unsigned seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> d(mean, sd);
  auto v = Value::alloc(cpu::dtype_of<T>(), {n});
  for (int64_t i = 0; i < n; ++i) v->template data<T>()[i] = static_cast<T>(d(g));
  return v;
}

}  // namespace

TEST_CASE("kernels.cpu.moments.matches_two_pass_on_awkward_data") {
  // Large mean, small spread: sum x^2 - (sum x)^2 / n would lose every digit in f64 here.
  check_rows<float>(normal<float>((1 << 20) + 77, 1e4, 1e-2, 1), 1, 1e-9);
  check_rows<float>(normal<float>(100003, -3e7, 3.0, 2), 1, 1e-9);
  check_rows<double>(normal<double>((1 << 18) + 5, 1e9, 1e-3, 3), 1, 1e-9);
  check_rows<float>(normal<float>(1, 5, 1, 4), 1, 0);  // one element: m2 = 0
  // An outlier first (the chunk's shift far from its mean), then the rest.
  auto v = normal<float>(50000, 0, 1, 5);
  v->data<float>()[0] = 1e6f;
  check_rows<float>(v, 1, 1e-9);
}

TEST_CASE("kernels.cpu.moments.rows") {
  auto v = normal<float>(37 * 1001, 2.5, 0.5, 6);
  check_rows<float>(v, 37, 1e-9);
  check_rows<float>(v, 1001, 1e-9);
  check_rows<float>(v, 37 * 1001, 0);  // rows of one
  auto w = normal<double>(3 * 70001, -1, 10, 7);
  check_rows<double>(w, 3, 1e-9);
}

TEST_CASE("kernels.cpu.moments.nan_and_inf") {
  auto v = normal<float>(40000, 0, 1, 8);
  v->data<float>()[30000] = std::numeric_limits<float>::infinity();
  auto m = moments(v, 1);
  CHECK(std::isinf(m[0].sum));
  CHECK(m[0].sum > 0);
  CHECK(std::isnan(m[0].m2));
  v->data<float>()[0] = std::numeric_limits<float>::infinity();  // the shift itself
  m = moments(v, 1);
  CHECK(std::isinf(m[0].sum));
  CHECK(std::isnan(m[0].m2));
  v->data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  m = moments(v, 1);
  CHECK(std::isnan(m[0].sum));
  CHECK(std::isnan(m[0].m2));
}

TEST_CASE("kernels.cpu.moments.thread_count_independent") {
  auto v = normal<float>((1 << 19) + 3, 7, 2, 9);
  const int was = cpu::num_threads();
  cpu::set_num_threads(1);
  const auto one = moments(v, 1);
  cpu::set_num_threads(2);
  const auto two = moments(v, 1);
  cpu::set_num_threads(was);
  CHECK(one[0].sum == two[0].sum);
  CHECK(one[0].mean() == two[0].mean());
  CHECK(one[0].m2 == two[0].m2);
}
