// The complex, f16/bf16 and i8/u8 element functions (kernels/functors.hpp, shared with CUDA),
// through run_map on every instruction set, against std::complex and plain integer arithmetic.
#include <doctest/doctest.h>

#include <complex>
#include <vector>

#include "helpers.hpp"
#include "kernels/functors.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

const std::vector<c128> kZ{{1, 2}, {3.5, -4}, {-2, 0.5}, {0, -1}, {1e-3, 7}, {-0.75, -0.25}, {5, 0}, {-3, 0}};
const std::vector<c128> kW{{0.5, 1}, {-1, 1}, {2, -3}, {3, 0.5}, {-0.25, 2}, {1, 0}, {0, 2}, {1e-8, -4}};

std::complex<double> sc(c128 z) { return {z.re, z.im}; }

// op over kZ (and kW) in c128, element by element.
std::vector<c128> run(Op op, bool binary, DType out = DType::C128) {
  const Shape s{static_cast<int64_t>(kZ.size())};
  auto a = tensor<c128>(s, kZ), b = tensor<c128>(s, kW);
  auto o = Value::alloc(out, s);
  std::vector<View> leaves{a->view()};
  if (binary) leaves.push_back(b->view());
  cpu::run_map(single(op, out, DType::C128, leaves), o->view());
  std::vector<c128> r;
  for (size_t i = 0; i < kZ.size(); ++i) {
    if (out == DType::C128) r.push_back(o->data<c128>()[i]);
    else r.emplace_back(o->data<double>()[i], 0);
  }
  return r;
}

void near(c128 got, std::complex<double> want, double tol, const char* what) {
  INFO(what << ": got (" << got.re << ", " << got.im << "), want " << want);
  CHECK(std::abs(sc(got) - want) <= tol * std::max(1.0, std::abs(want)));
}

}  // namespace

TEST_CASE("kernels.cpu.complex.functions_match_std_complex") {
  for_each_isa([&](const char* isa) {
    INFO(isa);
    struct Case {
      Op op;
      std::complex<double> (*f)(std::complex<double>);
    };
    const Case cases[] = {{Op::Exp, [](std::complex<double> z) { return std::exp(z); }},
                          {Op::Log, [](std::complex<double> z) { return std::log(z); }},
                          {Op::Sqrt, [](std::complex<double> z) { return std::sqrt(z); }},
                          {Op::Sin, [](std::complex<double> z) { return std::sin(z); }},
                          {Op::Cos, [](std::complex<double> z) { return std::cos(z); }},
                          {Op::Square, [](std::complex<double> z) { return z * z; }},
                          {Op::Reciprocal, [](std::complex<double> z) { return 1.0 / z; }},
                          {Op::Neg, [](std::complex<double> z) { return -z; }},
                          {Op::Conj, [](std::complex<double> z) { return std::conj(z); }}};
    for (const Case& c : cases) {
      const std::vector<c128> r = run(c.op, false);
      for (size_t i = 0; i < kZ.size(); ++i) near(r[i], c.f(sc(kZ[i])), 1e-14, op_def(c.op).name.data());
    }
    const std::vector<c128> ab = run(Op::Abs, false, DType::F64), an = run(Op::Angle, false, DType::F64);
    for (size_t i = 0; i < kZ.size(); ++i) {
      CHECK(ab[i].re == doctest::Approx(std::abs(sc(kZ[i]))).epsilon(1e-15));
      CHECK(an[i].re == doctest::Approx(std::arg(sc(kZ[i]))).epsilon(1e-15));
    }
  });
}

TEST_CASE("kernels.cpu.complex.arithmetic") {
  const std::vector<c128> mul = run(Op::Mul, true), div = run(Op::Div, true), pw = run(Op::Pow, true);
  const std::vector<c128> add = run(Op::Add, true), sub = run(Op::Sub, true);
  for (size_t i = 0; i < kZ.size(); ++i) {
    const auto z = sc(kZ[i]), w = sc(kW[i]);
    near(add[i], z + w, 0, "add");
    near(sub[i], z - w, 0, "sub");
    near(mul[i], z * w, 1e-16, "mul");
    near(div[i], z / w, 1e-15, "div");
    near(pw[i], std::pow(z, w), 1e-12, "pow");
  }
  // Smith's quotient keeps a huge divisor finite where the schoolbook one overflows.
  const c128 q = fn::Div<c128>{}(c128(1e300, 1e300), c128(1e300, 1e300));
  CHECK(q.re == 1);
  CHECK(q.im == 0);
  // Small integer powers multiply (numpy's npy_cpow): exact for Gaussian integers.
  const c128 p = fn::Pow<c128>{}(c128(1, 1), c128(8, 0));
  CHECK(p.re == 16);
  CHECK(p.im == 0);
  const c128 inv = fn::Pow<c128>{}(c128(0, 2), c128(-2, 0));
  CHECK(inv.re == -0.25);
  CHECK(fn::Pow<c128>{}(c128(0, 0), c128(0, 0)).re == 1);
  CHECK(std::isnan(fn::Pow<c128>{}(c128(0, 0), c128(-1, 0)).re));
  // sqrt keeps the branch cut's side by the sign of the imaginary zero, as C99's csqrt.
  CHECK(fn::Sqrt<c128>{}(c128(-4, 0.0)).im == 2);
  CHECK(fn::Sqrt<c128>{}(c128(-4, -0.0)).im == -2);
  CHECK(fn::Exp<c128>{}(c128(1, -0.0)).im == 0);
  CHECK(std::signbit(fn::Exp<c128>{}(c128(1, -0.0)).im));
}

TEST_CASE("kernels.cpu.complex.casts") {
  CHECK(fn::Cast<c64, float>{}(c64(2.5f, -1)) == 2.5f);
  CHECK(fn::Cast<c64, bool>{}(c64(0, -1)));
  CHECK_FALSE(fn::Cast<c128, bool>{}(c128(0, 0)));
  CHECK(fn::Cast<int32_t, c64>{}(7) == c64(7, 0));
  CHECK(fn::Cast<c64, c128>{}(c64(0.1f, 2)) == c128(double(0.1f), 2));
  CHECK(fn::Cast<f16, c64>{}(f16(0.5)) == c64(0.5f, 0));
  CHECK(fn::Cast<double, f16>{}(0.1).bits == f16(0.1).bits);
  CHECK(fn::Cast<int64_t, bf16>{}(3).bits == bf16(3.0).bits);
  CHECK(fn::Cast<bf16, int32_t>{}(bf16(-2.5)) == -2);
  CHECK(fn::Cast<f16, bool>{}(f16(0.0)) == false);
}

TEST_CASE("kernels.cpu.complex.small_integers_wrap") {
  CHECK(fn::Add<int8_t>{}(100, 100) == -56);
  CHECK(fn::Mul<uint8_t>{}(200, 3) == 88);
  CHECK(fn::Neg<uint8_t>{}(1) == 255);
  CHECK(fn::FloorDiv<int8_t>{}(-128, -1) == -128);
  CHECK(fn::FloorDiv<int8_t>{}(-7, 2) == -4);
  CHECK(fn::Mod<int8_t>{}(-7, 3) == 2);
  CHECK(fn::FloorDiv<uint8_t>{}(200, 0) == 0);
  CHECK(fn::Mod<uint8_t>{}(200, 7) == 4);
  CHECK(fn::Abs<int8_t>{}(-128) == -128);
  CHECK(fn::Sign<uint8_t>{}(0) == 0);
  CHECK(fn::Sign<uint8_t>{}(9) == 1);
  CHECK(fn::Cast<double, uint8_t>{}(-3.5) == 0);     // saturates
  CHECK(fn::Cast<double, uint8_t>{}(300.0) == 255);  // saturates
  CHECK(fn::Cast<double, int8_t>{}(-200.0) == -128);
  CHECK(fn::Cast<int32_t, uint8_t>{}(300) == 44);  // integer narrowing wraps
  CHECK(fn::Pow<uint8_t>{}(3, 5) == 243);
}
