#include <doctest/doctest.h>

#include "engine/ir/builders.hpp"
#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"

using namespace tapestry;

TEST_CASE("engine.ir.node.hash_consing") {
  NodeRef a = build::full({4}, 1.0, DType::F32);
  NodeRef b = build::full({4}, 1.0, DType::F32);
  CHECK(a == b);  // same op, same attrs: one node
  NodeRef x = build::binary(Op::Add, a, build::Operand::number(2));
  NodeRef y = build::binary(Op::Add, b, build::Operand::number(2));
  CHECK(x == y);
  NodeRef z = build::binary(Op::Add, a, build::Operand::number(3));
  CHECK(x != z);
}

TEST_CASE("engine.ir.node.sources_are_never_merged") {
  auto v1 = Value::alloc(DType::F32, {2});
  auto v2 = Value::alloc(DType::F32, {2});
  NodeRef s1 = make_source(v1, {2}, DType::F32);
  NodeRef s2 = make_source(v2, {2}, DType::F32);
  CHECK(s1 != s2);
  CHECK(s1->id != s2->id);
}

TEST_CASE("engine.ir.node.dead_nodes_leave_the_table") {
  const size_t before = live_node_count();
  {
    NodeRef a = build::rand({3, 3}, 1234567, DType::F32);
    NodeRef b = build::unary(Op::Exp, a);
    CHECK(live_node_count() >= before + 2);
  }
  CHECK(live_node_count() == before);
}
