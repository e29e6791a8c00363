// tp.grad's complex rules against central finite differences in c128, with torch's convention:
// the gradient of a real loss L at z = a + ib is dL/da + i dL/db.
//   cfd_check("mul", {{3}, {3}}, [](Xs x) { return bin(Op::Mul, x[0], x[1]); });
// Each case builds L = sum(re(f(z)) r1 + im(f(z)) r2) with fixed random r1, r2 and perturbs the
// real and imaginary part of every element of every input; also sharded on 3 modelled ranks.
#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <string>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/complex.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/grad/grad.hpp"
#include "engine/ir/value.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/run_sharded.hpp"

using namespace tapestry;
using build::Operand;
using Xs = const std::vector<NodeRef>&;
using Fn = std::function<NodeRef(Xs)>;
using c128 = cx<double>;

namespace {

std::mt19937_64 rng(777);

std::vector<c128> random_values(int64_t n, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<c128> v(n);
  for (c128& z : v) z = c128(u(rng), u(rng));
  return v;
}

NodeRef source(const Shape& s, const std::vector<c128>& v) {
  auto val = Value::alloc(DType::C128, s);
  std::copy(v.begin(), v.end(), val->data<c128>());
  return make_source(val, s, DType::C128);
}

NodeRef real_source(const Shape& s, const std::vector<c128>& v) {
  auto val = Value::alloc(DType::F64, s);
  for (size_t i = 0; i < v.size(); ++i) val->data<double>()[i] = v[i].re;
  return make_source(val, s, DType::F64);
}

NodeRef bin(Op op, const Operand& a, const Operand& b) { return build::binary(op, a, b); }
NodeRef un(Op op, const NodeRef& x) { return build::unary(op, x); }

void cfd_check(const std::string& name, const std::vector<Shape>& shapes, const Fn& f, int ranks = 1,
               double lo = -2, double hi = 2, double h = 1e-6) {
  CAPTURE(name);
  CAPTURE(ranks);
  std::vector<std::vector<c128>> xs;
  std::vector<NodeRef> nodes;
  for (const Shape& s : shapes) {
    xs.push_back(random_values(numel(s), lo, hi));
    nodes.push_back(source(s, xs.back()));
  }
  const NodeRef y0 = f(nodes);
  const NodeRef r1 = real_source(y0->shape, random_values(numel(y0->shape), -1, 1));
  const NodeRef r2 = real_source(y0->shape, random_values(numel(y0->shape), -1, 1));
  auto loss_of = [&](Xs in) {
    const NodeRef y = build::cast(f(in), DType::C128);
    const NodeRef l = bin(Op::Add, bin(Op::Mul, build::complex_part(Op::Real, y), r1),
                          bin(Op::Mul, build::complex_part(Op::Imag, y), r2));
    return build::reduce(Op::Sum, l, {}, false);
  };
  const std::vector<NodeRef> gs = grad(loss_of(nodes), nodes);
  if (ranks > 1) run_sharded(gs, plan::Mesh::modelled(ranks), {}, true);
  else evaluate(gs);
  for (size_t i = 0; i < xs.size(); ++i) {
    REQUIRE(gs[i]->dtype == DType::C128);
    REQUIRE(gs[i]->shape == shapes[i]);
    const c128* g = gs[i]->value->data<c128>();
    for (size_t j = 0; j < xs[i].size(); ++j) {
      auto at = [&](c128 dz) {
        std::vector<NodeRef> in = nodes;
        std::vector<c128> v = xs[i];
        v[j] = v[j] + dz;
        in[i] = source(shapes[i], v);
        const NodeRef l = loss_of(in);
        evaluate({l});
        return l->value->data<double>()[0];
      };
      const double dre = (at({h, 0}) - at({-h, 0})) / (2 * h);
      const double dim = (at({0, h}) - at({0, -h})) / (2 * h);
      CAPTURE(i);
      CAPTURE(j);
      CHECK(g[j].re == doctest::Approx(dre).epsilon(1e-5).scale(1));
      CHECK(g[j].im == doctest::Approx(dim).epsilon(1e-5).scale(1));
    }
  }
}

}  // namespace

TEST_CASE("engine.ir.grad.complex.maps") {
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div})
    cfd_check(
        std::string(op_def(op).name), {{2, 3}, {3}}, [op](Xs x) { return bin(op, x[0], x[1]); }, 1, 0.3, 2);
  for (Op op : {Op::Neg, Op::Exp, Op::Log, Op::Sqrt, Op::Sin, Op::Cos, Op::Square, Op::Reciprocal, Op::Conj,
                Op::Real, Op::Imag, Op::Abs, Op::Angle})
    cfd_check(
        std::string(op_def(op).name), {{4}}, [op](Xs x) { return un(op, x[0]); }, 1, 0.3, 2);
  cfd_check("complex(re, im)", {{3}, {3}}, [](Xs x) {
    return build::make_complex(build::complex_part(Op::Imag, x[0]), build::complex_part(Op::Real, x[1]));
  });
  cfd_check(
      "pow", {{3}, {3}}, [](Xs x) { return bin(Op::Pow, x[0], x[1]); }, 1, 0.3, 2);
  // A quadratic, so the wide step (over c64's rounding) is still exact.
  cfd_check(
      "to c64 and back", {{3}},
      [](Xs x) { return bin(Op::Mul, build::cast(build::cast(x[0], DType::C64), DType::C128), x[0]); }, 1, -2,
      2, 0.05);
}

TEST_CASE("engine.ir.grad.complex.reductions_and_matmul") {
  cfd_check("sum", {{2, 3}}, [](Xs x) { return build::reduce(Op::Sum, x[0], {1}, false); });
  cfd_check("prod", {{2, 3}}, [](Xs x) { return build::reduce(Op::Prod, x[0], {0}, false); });
  cfd_check("matmul", {{2, 3}, {3, 2}}, [](Xs x) { return build::matmul(x[0], x[1]); });
  cfd_check(
      "matmul", {{2, 3}, {3, 2}}, [](Xs x) { return build::matmul(x[0], x[1]); }, 3);
}

TEST_CASE("engine.ir.grad.complex.fft") {
  for (bool inverse : {false, true})
    for (build::FftNorm norm : {build::FftNorm::Backward, build::FftNorm::Ortho, build::FftNorm::Forward})
      for (int ranks : {1, 3})
        cfd_check(
            inverse ? "ifft" : "fft", {{3, 4}},
            [&](Xs x) { return build::fft(x[0], 1, std::nullopt, norm, inverse); }, ranks);
  cfd_check("irfft", {{2, 3}}, [](Xs x) { return build::irfft(x[0], 1, 5, build::FftNorm::Ortho); });
  cfd_check("rfft(re)", {{6}}, [](Xs x) {
    return build::rfft(build::complex_part(Op::Real, x[0]), 0, {}, build::FftNorm::Backward);
  });
}

TEST_CASE("engine.ir.grad.complex.errors") {
  const NodeRef z = source({2}, {c128(1, 2), c128(3, 4)});
  std::string what;
  try {
    grad(build::reduce(Op::Sum, z, {}, false), {z});
  } catch (const Error& e) {
    what = e.what();
  }
  CHECK(what.find("loss must be a real float") != std::string::npos);
}
