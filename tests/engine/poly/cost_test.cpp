#include <doctest/doctest.h>

#include "engine/ir/node.hpp"
#include "engine/poly/cost.hpp"
#include "engine/poly/stencil.hpp"

using namespace tapestry;
using namespace tapestry::poly;

namespace {
NodeRef src(const Shape& s) { return make_source(nullptr, s, DType::F32); }
}  // namespace

TEST_CASE("engine.poly.cost.matmul_block") {
  NodeRef y = make_node(Op::Matmul, {src({8, 6}), src({6, 10})}, Attrs{}, {8, 10}, DType::F32);
  const Signature s = signature_of(*y);
  const Box block({0, 0, 0}, {3, 9, 2});  // half the rows, all columns, half of k
  const BlockCost c = block_cost(s, block);
  CHECK(c.flops == 2.0 * 4 * 10 * 3);
  CHECK(c.input_bytes == std::vector<double>{4 * 3 * 4.0, 3 * 10 * 4.0});
  CHECK(c.output_bytes == 4 * 10 * 4.0);
  CHECK(c.bytes() == c.input_bytes[0] + c.input_bytes[1] + c.output_bytes);
}

TEST_CASE("engine.poly.cost.marginals_are_the_closed_form_derivative") {
  NodeRef y = make_node(Op::Matmul, {src({8, 6}), src({6, 10})}, Attrs{}, {8, 10}, DType::F32);
  const Signature s = signature_of(*y);
  const std::vector<Marginal> m = marginal_costs(s);
  REQUIRE(m.size() == 3);
  // One more row i costs 2 * 10 * 6 flops, reads one more row of A (6 floats), writes 10.
  CHECK(m[0].flops == 2.0 * 10 * 6);
  CHECK(m[0].input_bytes == std::vector<double>{6 * 4.0, 0});
  CHECK(m[0].output_bytes == 10 * 4.0);
  // One more k: a column of A and a row of B, nothing more of the output.
  CHECK(m[2].input_bytes == std::vector<double>{8 * 4.0, 10 * 4.0});
  CHECK(m[2].output_bytes == 0);
}

TEST_CASE("engine.poly.cost.stencil_halo_bytes") {
  Signature s;  // a 1-D 3-point stencil written by hand with the helper projection
  s.space.push_back(IndexDim{"y", 8, IndexDim::Parallel, CombineKind::None, true});
  s.inputs.push_back(Access{conv_input(1, 1, 3), {10}, DType::F64});
  s.output = Access{Projection::identity(1), {8}, DType::F64};
  s.flops_per_point = 5;
  CHECK(signature_problem(s) == "");
  const BlockCost c = block_cost(s, Box({0}, {3}));
  CHECK(c.input_bytes[0] == 6 * 8.0);  // 4 rows plus a halo of 2
  CHECK(marginal_costs(s)[0].input_bytes[0] == 8.0);
}
