#include <doctest/doctest.h>

#include <string>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"

using namespace tapestry;
using build::Operand;

static std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("engine.ir.builders.broadcast_and_promote") {
  NodeRef a = build::full({3, 1}, 1, DType::I32);
  NodeRef b = build::full({4}, 1, DType::F32);
  NodeRef c = build::binary(Op::Add, a, b);
  CHECK(c->shape == Shape{3, 4});
  CHECK(c->dtype == DType::F64);
  CHECK(build::binary(Op::Mul, b, Operand::number(2.5))->dtype == DType::F32);
  CHECK(build::binary(Op::Mul, a, Operand::number(2.5))->dtype == DType::F64);
  CHECK(build::binary(Op::Mul, a, Operand::integer_number(2))->dtype == DType::I32);
  CHECK(build::binary(Op::Div, a, a)->dtype == DType::F64);
  CHECK(build::binary(Op::Lt, a, b)->dtype == DType::Bool);
}

TEST_CASE("engine.ir.builders.matmul_rules") {
  NodeRef m = build::full({3, 4}, 1, DType::F32);
  NodeRef v = build::full({4}, 1, DType::F32);
  CHECK(build::matmul(m, v)->shape == Shape{3});
  CHECK(build::matmul(v, v)->shape == Shape{});
  NodeRef batch = build::full({5, 4, 2}, 1, DType::F32);
  CHECK(build::matmul(m, batch)->shape == Shape{5, 3, 2});
  const std::string e = error_of([&] { build::matmul(m, build::full({5, 2}, 1, DType::F32)); });
  CHECK(e == "inner dimensions differ: {3,4} @ {5,2} (4 ~= 5)");
}

TEST_CASE("engine.ir.builders.reductions") {
  NodeRef x = build::full({2, 3, 4}, 1, DType::I32);
  CHECK(build::reduce(Op::Sum, x, {1}, false)->shape == Shape{2, 4});
  CHECK(build::reduce(Op::Sum, x, {1}, false)->dtype == DType::I64);
  CHECK(build::reduce(Op::Sum, x, {0, 2}, true)->shape == Shape{1, 3, 1});
  CHECK(build::reduce(Op::Max, x, {}, false)->shape == Shape{});
  CHECK(build::mean(x, {2}, false)->dtype == DType::F64);
  CHECK(error_of([&] { build::reduce(Op::Sum, x, {1, 1}, false); }).find("twice") != std::string::npos);
}

TEST_CASE("engine.ir.builders.shape_ops") {
  NodeRef x = build::full({2, 3, 4}, 1, DType::F32);
  CHECK(build::reshape(x, {6, -1})->shape == Shape{6, 4});
  CHECK(error_of([&] { build::reshape(x, {5, -1}); }).find("cannot reshape {2,3,4}") == 0);
  CHECK(build::permute(x, {2, 0, 1})->shape == Shape{4, 2, 3});
  CHECK(build::squeeze(build::full({1, 3, 1}, 1, DType::F32), std::nullopt)->shape == Shape{3});
  CHECK(build::cat({x, x}, 1)->shape == Shape{2, 6, 4});
  CHECK(build::stack({x, x}, 0)->shape == Shape{2, 2, 3, 4});
  CHECK(build::select(x, 1, 2)->shape == Shape{2, 4});
  CHECK(error_of([&] { build::narrow(x, 2, 2, 3); }).find("out of bounds") != std::string::npos);
  // reshape(reshape(x)) is one node: loop bodies stay structurally equal
  NodeRef r = build::reshape(build::reshape(x, {24}), {4, 6});
  CHECK(r->inputs[0] == x);
}

TEST_CASE("engine.ir.builders.rejects_bad_generators") {
  CHECK(error_of([] { build::arange(1, 5, 0, DType::F32); }) == "step must not be 0");
  CHECK(build::arange(5, 1, 1, DType::F32)->shape == Shape{0});  // an empty range, as a Lua for
  CHECK(build::full({2, 0}, 1, DType::F32)->shape == Shape{2, 0});
  CHECK(error_of([] {
          build::full({2, -1}, 1, DType::F32);
        }) == "shape must have sizes of at least 0, got {2,-1}");
  CHECK(!error_of([] { build::full({int64_t{1} << 40, int64_t{1} << 40}, 1, DType::F32); }).empty());
  CHECK(!error_of([] { build::rand({2}, 1, DType::I32); }).empty());
}
