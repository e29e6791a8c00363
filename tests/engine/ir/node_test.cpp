#include <doctest/doctest.h>

#include "engine/ir/build/builders.hpp"
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

// The release rule (node.hpp): a value stays while a HeldNode or a waiting consumer needs it.
TEST_CASE("engine.ir.node.release_rule") {
  auto value_of = [](const NodeRef& n) { return Value::alloc(n->dtype, n->shape); };
  NodeRef leaf = build::rand({8}, 7, DType::F32);
  set_value(*leaf, value_of(leaf));

  SUBCASE("a computed node loses its value when its last holder goes") {
    NodeRef u = build::unary(Op::Exp, leaf);
    HeldNode h = u;
    set_value(*u, value_of(u));
    CHECK(u->value);
    h = nullptr;
    CHECK_FALSE(u->value);
    CHECK(leaf->value);  // never held: an engine temporary's value is kept
  }
  SUBCASE("data keeps its value when released; a generated leaf does not") {
    NodeRef data = make_source(Value::alloc(DType::F32, {8}), {8}, DType::F32);
    HeldNode h = data;
    h = nullptr;
    CHECK(data->value);
    HeldNode g = leaf;
    g = nullptr;
    CHECK_FALSE(leaf->value);  // rand is recomputed from its seed if asked again
  }
  SUBCASE("a waiting consumer keeps its input's value; computing it releases the input") {
    HeldNode h1 = build::unary(Op::Exp, leaf);
    NodeRef u1 = h1;
    set_value(*u1, value_of(u1));
    // u2 = u1 + 0.5 * neg(u1), its interior held by temporaries, as Lua builds it
    HeldNode t1 = build::unary(Op::Neg, u1);
    HeldNode t2 = build::binary(Op::Mul, t1.get(), build::Operand::number(0.5));
    HeldNode h2 = build::binary(Op::Add, u1, t2.get());
    h1 = nullptr;
    CHECK(u1->value);  // u2 will read it
    t1 = nullptr;
    t2 = nullptr;
    CHECK(u1->value);
    set_value(*h2.get(), value_of(h2));
    CHECK_FALSE(u1->value);  // no one can read it any more
    CHECK(u1->need.load() == 0);
  }
  SUBCASE("clearing a needed consumer's value makes it wait again") {
    HeldNode h1 = build::unary(Op::Exp, leaf);
    NodeRef u1 = h1;
    set_value(*u1, value_of(u1));
    HeldNode h2 = build::unary(Op::Neg, u1);
    set_value(*h2.get(), value_of(h2));
    CHECK(u1->need.load() == 1);  // h1 only
    set_value(*h2.get(), nullptr);
    CHECK(u1->need.load() == 2);  // h1 and the waiting h2
    h1 = nullptr;
    CHECK(u1->value);
  }
  SUBCASE("a value never held (an engine temporary) is kept") {
    NodeRef t = build::unary(Op::Exp, leaf);
    set_value(*t, value_of(t));
    NodeRef c = build::unary(Op::Neg, t);
    set_value(*c, value_of(c));
    CHECK(t->value);
  }
  SUBCASE("a long chain is released without deep recursion") {
    HeldNode top = leaf;
    for (int i = 0; i < 200000; ++i) top = build::binary(Op::Add, top.get(), build::Operand::number(1));
    const Node* bottom_consumer = top.get().get();
    CHECK(bottom_consumer->need.load() == 1);
    set_value(*top.get(), value_of(top));  // satisfies the whole chain below it
    CHECK(leaf->need.load() == 0);
  }
}
