// tp.grad's rules against central finite differences in f64, op by op.
//   fd_check("exp", {{2, 3}}, [](Xs x) { return build::unary(Op::Exp, x[0]); });
// Each case builds f(x) = sum(op(x) * r) with a fixed random r, and compares grad(f, x) with
// (f(x + h e_i) - f(x - h e_i)) / 2h for every element of every input.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/einsum.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/grad/grad.hpp"
#include "engine/ir/value.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/run_sharded.hpp"

using namespace tapestry;
using build::Operand;
using Xs = const std::vector<NodeRef>&;
using Fn = std::function<NodeRef(Xs)>;

namespace {

std::mt19937_64 rng(12345);

// Values away from the kinks of relu/abs/round (so a step of h never crosses one).
std::vector<double> random_values(int64_t n, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) {
    do x = u(rng);
    while (std::abs(x - std::round(x)) < 0.02 || std::abs(x - std::round(x) - 0.5) < 0.02 ||
           std::abs(x - std::round(x) + 0.5) < 0.02);
  }
  return v;
}

NodeRef source(const Shape& s, const std::vector<double>& v) {
  auto val = Value::alloc(DType::F64, s);
  std::copy(v.begin(), v.end(), val->data<double>());
  return make_source(val, s, DType::F64);
}

std::vector<double> values_of(const NodeRef& n) {
  REQUIRE(n->value != nullptr);
  REQUIRE(n->value->view().is_contiguous());  // observed roots are contiguous
  const double* p = n->value->data<double>();
  return std::vector<double>(p, p + numel(n->shape));
}

double eval_scalar(const NodeRef& n) {
  evaluate({n});
  return n->value->data<double>()[0];
}

struct Case {
  std::vector<Shape> shapes;
  double lo = -2, hi = 2;                  // input range
  int ranks = 1;                           // > 1: evaluate the gradients sharded on a modelled mesh
  std::vector<std::vector<double>> given;  // fixed inputs (ties), else random
  double h = 1e-6;                         // the finite-difference step
};

void fd_check(const std::string& name, const Case& c, const Fn& f) {
  CAPTURE(name);
  std::vector<std::vector<double>> xs = c.given;
  for (size_t i = xs.size(); i < c.shapes.size(); ++i)
    xs.push_back(random_values(numel(c.shapes[i]), c.lo, c.hi));
  std::vector<NodeRef> nodes;
  for (size_t i = 0; i < xs.size(); ++i) nodes.push_back(source(c.shapes[i], xs[i]));
  const NodeRef y0 = f(nodes);
  const NodeRef r = source(y0->shape, random_values(numel(y0->shape), -1, 1));
  auto loss_of = [&](Xs in) {
    return build::reduce(Op::Sum, build::binary(Op::Mul, build::cast(f(in), DType::F64), r), {}, false);
  };
  const std::vector<NodeRef> gs = grad(loss_of(nodes), nodes);
  if (c.ranks > 1) run_sharded(gs, plan::Mesh::modelled(c.ranks), {}, true);
  else evaluate(gs);
  const double h = c.h;
  for (size_t i = 0; i < xs.size(); ++i) {
    REQUIRE(gs[i]->shape == c.shapes[i]);
    REQUIRE(gs[i]->dtype == DType::F64);
    const std::vector<double> g = values_of(gs[i]);
    for (size_t j = 0; j < xs[i].size(); ++j) {
      auto at = [&](double dx) {
        std::vector<NodeRef> in = nodes;
        std::vector<double> v = xs[i];
        v[j] += dx;
        in[i] = source(c.shapes[i], v);
        return eval_scalar(loss_of(in));
      };
      const double fd = (at(h) - at(-h)) / (2 * h);
      CAPTURE(i);
      CAPTURE(j);
      CHECK(g[j] == doctest::Approx(fd).epsilon(1e-5).scale(1));
    }
  }
}

NodeRef un(Op op, const NodeRef& x) { return build::unary(op, x); }
NodeRef bin(Op op, const Operand& a, const Operand& b) { return build::binary(op, a, b); }

}  // namespace

TEST_CASE("engine.ir.grad.unary") {
  const Op any[] = {Op::Neg,        Op::Abs,     Op::Exp,  Op::Sin,   Op::Cos,
                    Op::Tanh,       Op::Sigmoid, Op::Relu, Op::Gelu,  Op::Square,
                    Op::Reciprocal, Op::Floor,   Op::Ceil, Op::Round, Op::Sign};
  for (Op op : any) fd_check(std::string(op_def(op).name), {{{2, 3}}}, [op](Xs x) { return un(op, x[0]); });
  for (Op op : {Op::Log, Op::Sqrt, Op::Rsqrt})
    fd_check(std::string(op_def(op).name), {{{2, 3}}, 0.3, 3}, [op](Xs x) { return un(op, x[0]); });
  fd_check("gelu_at_0", {{{3}}, -2, 2, 1, {{0.0, -1.3, 0.7}}}, [](Xs x) { return un(Op::Gelu, x[0]); });
  // f64 -> f32 -> f64: the adjoint returns through both casts (a wide step: f32 rounding).
  fd_check("cast", {{{4}}, -2, 2, 1, {}, 0.05},
           [](Xs x) { return bin(Op::Mul, build::cast(build::cast(x[0], DType::F32), DType::F64), x[0]); });
}

TEST_CASE("engine.ir.grad.binary") {
  for (Op op :
       {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Maximum, Op::Minimum, Op::Atan2, Op::Mod, Op::FloorDiv}) {
    const std::string n(op_def(op).name);
    fd_check(n, {{{2, 3}, {2, 3}}, 0.2, 3}, [op](Xs x) { return bin(op, x[0], x[1]); });
    // Broadcasting: {2,1} with {3}: Expand's rule sums the adjoint back.
    fd_check(n + ".broadcast", {{{2, 1}, {3}}, 0.2, 3}, [op](Xs x) { return bin(op, x[0], x[1]); });
  }
  fd_check("pow", {{{2, 3}, {2, 3}}, 0.3, 2}, [](Xs x) { return bin(Op::Pow, x[0], x[1]); });
  fd_check("pow.scalar", {{{4}}, 0.3, 2}, [](Xs x) { return bin(Op::Pow, x[0], Operand::number(3)); });
  fd_check("mul.scalar", {{{4}}}, [](Xs x) { return bin(Op::Mul, Operand::number(2.5), x[0]); });
  fd_check("where", {{{2, 3}, {3}, {2, 1}}},
           [](Xs x) { return build::where(bin(Op::Gt, x[0], Operand::number(0)), x[1], x[2]); });
  fd_check("clamp", {{{6}}},
           [](Xs x) { return build::clamp(x[0], Operand::number(-0.5), Operand::number(0.5)); });
  // Ties split evenly: for two tied operands, exactly what a central difference sees (with
  // k > 2 tied the difference still reads 1/2 each, the even split 1/k; both are subgradients).
  fd_check("maximum.tie", {{{3}, {3}}, -2, 2, 1, {{1, 2, 3}, {1, 0, 3}}},
           [](Xs x) { return bin(Op::Maximum, x[0], x[1]); });
  fd_check("minimum.tie", {{{3}, {3}}, -2, 2, 1, {{1, 2, 3}, {1, 0, 3}}},
           [](Xs x) { return bin(Op::Minimum, x[0], x[1]); });
}

TEST_CASE("engine.ir.grad.reductions") {
  for (Op op : {Op::Sum, Op::Prod, Op::Max, Op::Min}) {
    const std::string n(op_def(op).name);
    fd_check(n + ".all", {{{2, 3}}}, [op](Xs x) { return build::reduce(op, x[0], {}, false); });
    fd_check(n + ".dim", {{{2, 3, 2}}}, [op](Xs x) { return build::reduce(op, x[0], {1}, false); });
    fd_check(n + ".keepdim", {{{2, 3, 2}}}, [op](Xs x) { return build::reduce(op, x[0], {0, 2}, true); });
  }
  fd_check("prod.one_zero", {{{2, 3}}, -2, 2, 1, {{0, 2, 3, 1.5, 0, 0}}},
           [](Xs x) { return build::reduce(Op::Prod, x[0], {1}, false); });
  fd_check("max.tie", {{{2, 3}}, -2, 2, 1, {{3, 1, 3, 2, 2, 0}}},
           [](Xs x) { return build::reduce(Op::Max, x[0], {1}, false); });
  fd_check("min.tie", {{{4}}, -2, 2, 1, {{1, -1, -1, 0}}},
           [](Xs x) { return build::reduce(Op::Min, x[0], {}, false); });
  fd_check("mean", {{{3, 4}}}, [](Xs x) { return build::mean(x[0], {0}, false); });
  fd_check("var", {{{3, 4}}}, [](Xs x) { return build::var(x[0], {1}, 1, true); });
  fd_check("std", {{{3, 4}}}, [](Xs x) { return build::std_dev(x[0], {}, 0, false); });
  fd_check("norm.3", {{{5}}, 0.2, 2}, [](Xs x) { return build::norm(x[0], 3, {}, false); });
  fd_check("norm.inf", {{{5}}}, [](Xs x) { return build::norm(x[0], INFINITY, {}, false); });
}

TEST_CASE("engine.ir.grad.contractions") {
  const Fn mm = [](Xs x) { return build::matmul(x[0], x[1]); };
  fd_check("matmul", {{{3, 4}, {4, 2}}}, mm);
  fd_check("matmul.batch_broadcast", {{{2, 3, 4}, {4, 2}}}, mm);
  fd_check("matmul.batch_both", {{{2, 1, 2, 3}, {3, 3, 2}}}, mm);
  fd_check("matmul.vectors", {{{4}, {4, 3}}}, mm);
  fd_check("matmul.dot", {{{4}, {4}}}, mm);
  fd_check("einsum.chain", {{{2, 3}, {3, 4}, {4, 2}}}, [](Xs x) { return build::einsum("ij,jk,kl->il", x); });
  fd_check("einsum.diag", {{{3, 3}}}, [](Xs x) { return build::einsum("ii->i", x); });
  fd_check("einsum.batch", {{{2, 3, 2}, {2, 2, 3}}}, [](Xs x) { return build::einsum("bij,bjk->bk", x); });
  fd_check("tensordot", {{{2, 3, 4}, {4, 3}}}, [](Xs x) {
    return build::tensordot(x[0], x[1], {1, 2}, {1, 0});
  });
}

TEST_CASE("engine.ir.grad.shape_ops") {
  fd_check("reshape", {{{2, 6}}}, [](Xs x) { return un(Op::Exp, build::reshape(x[0], {3, 4})); });
  fd_check("permute", {{{2, 3, 4}}}, [](Xs x) { return build::permute(x[0], {2, 0, 1}); });
  fd_check("expand", {{{3, 1}}}, [](Xs x) { return build::expand(x[0], {2, 3, 4}); });
  fd_check("slice.step", {{{5, 7}}}, [](Xs x) { return build::slice(x[0], {1, 0}, {2, 3}, {2, 3}); });
  fd_check("select", {{{3, 4}}}, [](Xs x) { return build::select(x[0], 1, 2); });
  fd_check("cat", {{{2, 3}, {2, 2}}}, [](Xs x) { return build::cat({x[0], x[1], x[0]}, 1); });
  fd_check("stack", {{{3}, {3}}}, [](Xs x) { return build::stack({x[0], x[1]}, 0); });
  fd_check("write_region", {{{4, 4}, {2, 1}}}, [](Xs x) {
    return build::write_region(x[0], {1, 2}, {2, 2}, x[1]);
  });
  fd_check("constrain", {{{4, 2}}}, [](Xs x) { return build::constrain(un(Op::Sin, x[0]), {2, 1}); });
  for (auto mode : {build::PadMode::Constant, build::PadMode::Reflect, build::PadMode::Periodic})
    fd_check("pad", {{{3, 4}}}, [mode](Xs x) { return build::pad(x[0], {1, 2}, {2, 1}, mode, 0.5); });
  fd_check("roll", {{{5}}}, [](Xs x) { return build::roll(x[0], 2, 0); });
}

TEST_CASE("engine.ir.grad.windows") {
  for (auto b : {build::Boundary::Zero, build::Boundary::Periodic, build::Boundary::Reflect})
    fd_check("stencil", {{{5, 4}, {3, 3}}}, [b](Xs x) { return build::stencil(x[0], x[1], b); });
  fd_check("stencil.1d_wide", {{{3}, {5}}},
           [](Xs x) { return build::stencil(x[0], x[1], build::Boundary::Zero); });
  fd_check("correlate.valid", {{{6, 5}, {2, 3}}}, [](Xs x) {
    return build::correlate(x[0], x[1], {0, 0}, {0, 0});
  });
  fd_check("correlate.asymmetric", {{{4}, {3}}}, [](Xs x) { return build::correlate(x[0], x[1], {2}, {0}); });
  build::Conv2dOptions plain, strided, dilated, grouped;
  strided.stride[0] = 2;
  strided.stride[1] = 3;
  strided.padding[0] = 1;
  dilated.dilation[0] = 2;
  dilated.padding[1] = 1;
  grouped.groups = 2;
  grouped.stride[1] = 2;
  fd_check("conv2d", {{{2, 2, 5, 5}, {3, 2, 3, 3}}},
           [plain](Xs x) { return build::conv2d(x[0], x[1], plain); });
  fd_check("conv2d.stride_pad", {{{1, 2, 6, 7}, {2, 2, 3, 2}}},
           [strided](Xs x) { return build::conv2d(x[0], x[1], strided); });
  fd_check("conv2d.dilation", {{{1, 1, 6, 5}, {2, 1, 2, 3}}},
           [dilated](Xs x) { return build::conv2d(x[0], x[1], dilated); });
  fd_check("conv2d.groups", {{{1, 4, 4, 5}, {2, 2, 2, 2}}},
           [grouped](Xs x) { return build::conv2d(x[0], x[1], grouped); });
  const int64_t k[2] = {2, 3}, s[2] = {2, 1}, p[2] = {1, 1}, k2[2] = {2, 2}, none[2] = {0, 0};
  fd_check("maxpool2d", {{{1, 2, 5, 6}}}, [&](Xs x) { return build::pool2d(Op::MaxPool2d, x[0], k, s, p); });
  fd_check("maxpool2d.overlap_tie", {{{1, 1, 3, 3}}, -2, 2, 1, {{1, 2, 1, 2, 0, 0, 1, 0, 1}}},
           [&](Xs x) { return build::pool2d(Op::MaxPool2d, x[0], k2, s, none); });
  fd_check("avgpool2d", {{{1, 2, 5, 6}}}, [&](Xs x) { return build::pool2d(Op::AvgPool2d, x[0], k, s, p); });
}

TEST_CASE("engine.ir.grad.graphs") {
  // A shared subexpression: every use adds its contribution.
  fd_check("shared", {{{3}}}, [](Xs x) {
    const NodeRef e = un(Op::Exp, x[0]);
    return bin(Op::Add, bin(Op::Mul, e, e), bin(Op::Mul, e, x[0]));
  });
  fd_check("sharded.mlp", {{{6, 4}, {4, 5}, {5}}, -1, 1, 3}, [](Xs x) {
    const NodeRef h = un(Op::Tanh, bin(Op::Add, build::matmul(x[0], x[1]), x[2]));
    return build::reduce(Op::Max, h, {1}, false);
  });
  fd_check("sharded.conv", {{{2, 2, 5, 4}, {3, 2, 3, 3}}, -1, 1, 3},
           [](Xs x) { return build::conv2d(x[0], x[1], build::Conv2dOptions{}); });
}

TEST_CASE("engine.ir.grad.deep_chain") {
  // 10^4 nodes deep: ordering and accumulation use no recursion.
  const NodeRef x = source({2}, {0.5, -0.25});
  NodeRef y = x;
  for (int i = 0; i < 10000; ++i) y = bin(Op::Add, bin(Op::Mul, y, Operand::number(0.9999)), x);
  const NodeRef loss = build::reduce(Op::Sum, y, {}, false);
  const std::vector<NodeRef> g = grad(loss, {x});
  evaluate(g);
  // dy_n/dx = sum_{k<=n} 0.9999^k = (1 - 0.9999^(n+1)) / (1 - 0.9999)
  const double want = (1 - std::pow(0.9999, 10001)) / (1 - 0.9999);
  CHECK(values_of(g[0])[0] == doctest::Approx(want).epsilon(1e-9));
}

TEST_CASE("engine.ir.grad.errors_and_zeros") {
  const NodeRef x = source({3}, {1, 2, 3});
  auto error_of = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of([&] { grad(x, {x}); }).find("scalar (one element), got shape {3}") != std::string::npos);
  const NodeRef loss = build::reduce(Op::Sum, x, {}, false);
  const NodeRef ints = build::arange(1, 3, 1, DType::I64);
  CHECK(error_of([&] { grad(loss, {ints}); }).find("params[1] is i64") != std::string::npos);
  CHECK(error_of([&] {
          grad(loss, {x, build::full({2}, 0, DType::F64)});
        }).find("constant") != std::string::npos);
  // Unrelated params get zeros of their shape; a one-element {1,1} loss is accepted.
  const NodeRef other = source({2, 2}, {1, 1, 1, 1});
  const NodeRef l11 = build::reshape(loss, {1, 1});
  const std::vector<NodeRef> g = grad(l11, {other, x});
  evaluate(g);
  CHECK(values_of(g[0]) == std::vector<double>{0, 0, 0, 0});
  CHECK(values_of(g[1]) == std::vector<double>{1, 1, 1});
  // An integer path carries no gradient: floor(x) cast to int and back.
  const NodeRef through_int = build::cast(build::cast(x, DType::I64), DType::F64);
  const std::vector<NodeRef> gi = grad(build::reduce(Op::Sum, through_int, {}, false), {x});
  evaluate(gi);
  CHECK(values_of(gi[0]) == std::vector<double>{0, 0, 0});
}
