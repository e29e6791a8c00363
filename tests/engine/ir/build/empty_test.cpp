#include <doctest/doctest.h>

#include <string>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/empty.hpp"
#include "engine/ir/error.hpp"

using namespace tapestry;

static std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// rand leaves stay leaves (a Full would fold into its users), so these see the builders' own folds.
static NodeRef leaf(const Shape& s, uint64_t seed = 1) { return build::rand(s, seed, DType::F64); }

static bool constant(const NodeRef& n, double v) {
  return n->op == Op::Full && n->inputs.empty() && attrs_of<FullAttrs>(*n).real == v;
}

TEST_CASE("engine.ir.build.empty.an_empty_result_is_a_constant") {
  const NodeRef e = leaf({0, 3});
  CHECK(e->op == Op::Rand);  // a generator of an empty shape stays itself
  const NodeRef y = build::binary(Op::Add, build::unary(Op::Exp, e), leaf({3}));
  CHECK(y->shape == Shape{0, 3});
  CHECK(constant(y, 0));
  CHECK(constant(build::reshape(e, {3, 0, 5}), 0));
  CHECK(constant(build::slice(leaf({4}), {1}, {1}, {0}), 0));  // a slice that selects nothing
  CHECK(build::op_node(Op::Neg, {e}, Attrs{}, e->shape, e->dtype)->inputs.empty());
}

TEST_CASE("engine.ir.build.empty.reductions_take_numpy_identities") {
  const NodeRef e = leaf({0, 3});
  CHECK(constant(build::reduce(Op::Sum, e, {0}, false), 0));
  CHECK(build::reduce(Op::Sum, e, {0}, false)->shape == Shape{3});
  CHECK(constant(build::reduce(Op::Prod, e, {}, false), 1));
  CHECK(build::reduce(Op::All, e, {0}, true)->shape == Shape{1, 3});
  CHECK(build::reduce(Op::Max, e, {1}, false)->shape == Shape{0});  // a non-empty dim: fine
  CHECK(error_of([&] { build::reduce(Op::Max, e, {0}, false); }) ==
        "cannot take the max over the empty dims {1} of x {0,3} (a zero-size reduction has no identity)");
  CHECK(error_of([&] { build::argreduce(Op::ArgMin, e, 0, false); }).find("the empty dim 1 of x {0,3}") !=
        std::string::npos);
  // The integer sum is i64 whatever the input, empty or not.
  CHECK(build::reduce(Op::Sum, build::full({0}, 0, DType::I32), {}, false)->dtype == DType::I64);
}

TEST_CASE("engine.ir.build.empty.matmul_cat_and_writes") {
  const NodeRef k0 = build::matmul(leaf({3, 0}), leaf({0, 4}, 2));
  CHECK(k0->shape == Shape{3, 4});
  CHECK(constant(k0, 0));
  CHECK(build::matmul(leaf({0, 3}), leaf({3, 4}, 2))->shape == Shape{0, 4});
  const NodeRef x = leaf({2, 3});
  CHECK(build::cat({leaf({0, 3}, 3), x, leaf({0, 3}, 4)}, 0) == x);  // empty parts add nothing
  CHECK(build::cat({leaf({2, 0}), leaf({2, 0}, 2)}, 1)->shape == Shape{2, 0});
  CHECK(build::write_region(x, {1, 0}, {0, 3}, build::Operand::number(5)) == x);
}

TEST_CASE("engine.ir.build.empty.refuses_what_has_no_meaning") {
  // Every builder folds what numpy defines; op_node refuses the rest by name instead of
  // handing the planner an empty index space.
  const std::string e = error_of([] {
    build::op_node(Op::Matmul, {leaf({2, 0}), leaf({0, 2})}, Attrs{}, {2, 2}, DType::F64);
  });
  CHECK(e ==
        "matmul of the empty tensor {2,0} (inputs {2,0}, {0,2}) into a non-empty result {2,2} is not "
        "supported");
  CHECK(error_of([] { build::reshape(leaf({0, 3}), {-1, 0}); }).find("ambiguous") != std::string::npos);
}
