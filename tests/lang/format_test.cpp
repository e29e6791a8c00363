// Tensor text, checked against what numpy's str() prints for the same data.
#include "lang/format.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace tapestry;

namespace {

template <class T> View make(DType t, const Shape& s, const std::vector<T>& xs) {
  auto v = Value::alloc(t, s);
  for (size_t i = 0; i < xs.size(); ++i) v->data<T>()[i] = xs[i];
  return v->view();
}

FormatOptions no_footer() {
  FormatOptions o;
  o.footer = false;
  return o;
}

std::string f32(const Shape& s, const std::vector<float>& xs) {
  return format_tensor(make(DType::F32, s, xs), no_footer());
}
std::string f64(const Shape& s, const std::vector<double>& xs) {
  return format_tensor(make(DType::F64, s, xs), no_footer());
}
std::string i64(const Shape& s, const std::vector<int64_t>& xs) {
  return format_tensor(make(DType::I64, s, xs), no_footer());
}
std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("format.ints") {
  CHECK(i64({3}, {1, -20, 300}) == "[  1 -20 300]");
  CHECK(format_tensor(make<int32_t>(DType::I32, {2}, {7, 8}), no_footer()) == "[7 8]");
}

TEST_CASE("format.floats") {
  CHECK(f32({3}, {0, 0, 2}) == "[0. 0. 2.]");
  CHECK(f64({3}, {1, 2.5, -3.25}) == "[ 1.    2.5  -3.25]");
  CHECK(f64({2}, {-0.5, 0.25}) == "[-0.5   0.25]");
  CHECK(f64({1}, {2.0 / 3}) == "[0.66666667]");
  CHECK(f32({2}, {0.1f, 1.0f / 3}) == "[0.1        0.33333334]");
}

TEST_CASE("format.scientific") {
  CHECK(f64({2}, {1e10, 1.2345e10}) == "[1.0000e+10 1.2345e+10]");
  CHECK(f64({2}, {1e10, 1}) == "[1.e+10 1.e+00]");
  CHECK(f64({2}, {1.5e-5, -1}) == "[ 1.5e-05 -1.0e+00]");
  CHECK(f64({1}, {1e-100}) == "[1.e-100]");
}

// Padding digits are the stored value's (numpy's dragon4 min_digits), not zeros: f32 0.6 is
// 0.60000002384..., which shows once a neighbour needs 8 significant digits.
TEST_CASE("format.scientific_pads_with_stored_digits") {
  CHECK(f32({3}, {0.6f, 1e-9f, 1.0f / 3}) == "[6.0000002e-01 9.9999997e-10 3.3333334e-01]");
  CHECK(f32({3}, {0.1f, 1e5f, 2.5f}) == "[1.0e-01 1.0e+05 2.5e+00]");
  CHECK(f32({2}, {-0.7f, 3e-7f}) == "[-7.e-01  3.e-07]");
  CHECK(f64({3}, {0.6, 1e-9, 1.0 / 3}) == "[6.00000000e-01 1.00000000e-09 3.33333333e-01]");
}

TEST_CASE("format.nonfinite") {
  CHECK(f64({3}, {1, kNan, -kInf}) == "[  1.  nan -inf]");
  CHECK(f64({3}, {1, kNan, kInf}) == "[ 1. nan inf]");
  CHECK(f64({2}, {kNan, kNan}) == "[nan nan]");
  CHECK(f32({2}, {1.5f, std::numeric_limits<float>::infinity()}) == "[1.5 inf]");
}

TEST_CASE("format.matrix") {
  CHECK(f32({2, 2}, {1, 2.5, -3, 4}) == "[[ 1.   2.5]\n [-3.   4. ]]");
  CHECK(i64({2, 2, 2}, iota(8)) == "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]");
  // A non-contiguous view prints in logical order.
  View t = make<int64_t>(DType::I64, {2, 3}, iota(6)).permuted({1, 0});
  CHECK(format_tensor(t, no_footer()) == "[[0 3]\n [1 4]\n [2 5]]");
}

TEST_CASE("format.footer") {
  View v = make<float>(DType::F32, {2, 2}, {1, 2.5, -3, 4});
  CHECK(format_tensor(v) == "[[ 1.   2.5]\n [-3.   4. ]]\n[f32 tensor of shape {2,2}]");
}

TEST_CASE("format.summary") {
  CHECK(i64({2000}, iota(2000)) == "[   0    1    2 ... 1997 1998 1999]");
  CHECK(i64({1000, 2}, iota(2000)) ==
        "[[   0    1]\n [   2    3]\n [   4    5]\n ...\n [1994 1995]\n [1996 1997]\n"
        " [1998 1999]]");
  FormatOptions o = no_footer();
  o.threshold = 4;
  o.edge_items = 1;
  CHECK(format_tensor(make(DType::I64, {5}, iota(5)), o) == "[0 ... 4]");
}

TEST_CASE("format.wrap") {
  const std::string s = i64({100}, iota(100));
  CHECK(s.substr(0, 76) == "[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n 24");
  CHECK(s.substr(s.size() - 14) == "\n 96 97 98 99]");
}

TEST_CASE("format.bool") {
  View v = make<bool>(DType::Bool, {3}, {true, false, true});
  CHECK(format_tensor(v, no_footer()) == "[ true false  true]");
  CHECK(format_tensor(v) == "[ true false  true]\n[bool tensor of shape {3}]");
}

TEST_CASE("format.scalar") {
  CHECK(format_tensor(make<float>(DType::F32, {}, {2.5f})) == "2.5");
  CHECK(format_tensor(make<double>(DType::F64, {}, {2})) == "2.0");
  CHECK(format_tensor(make<float>(DType::F32, {}, {0.1f})) == "0.1");
  CHECK(format_tensor(make<int32_t>(DType::I32, {}, {-7})) == "-7");
  CHECK(format_tensor(make<bool>(DType::Bool, {}, {true})) == "true");
  CHECK(format_tensor(make<double>(DType::F64, {}, {1e20})) == "1e+20");
  CHECK(format_scalar(make<int64_t>(DType::I64, {1}, {5})) == "5");
  CHECK(format_scalar(make<double>(DType::F64, {1}, {2})) == "2.0");
  CHECK(format_scalar(make<double>(DType::F64, {1}, {0.5})) == "0.5");
  CHECK(format_scalar(make<float>(DType::F32, {1}, {0.1f})) == "0.10000000149012");
  CHECK(format_scalar(make<bool>(DType::Bool, {1}, {false})) == "false");
}
