#include <doctest/doctest.h>

#include <cstring>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/value.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/store/lineage.hpp"

using namespace tapestry;
using build::Operand;

namespace {

// A stored leaf as the catalog makes one: a Source with no value.
NodeRef stored_leaf(const Shape& s) { return make_source(nullptr, s, DType::F32); }

std::vector<float> values(const NodeRef& n) {
  evaluate({n});
  const View v = n->value->view();
  std::vector<float> out(static_cast<size_t>(v.numel()));
  std::memcpy(out.data(), v.byte_ptr(), out.size() * sizeof(float));
  return out;
}

}  // namespace

TEST_CASE("engine.store.lineage.a_creator_recomputes_exactly") {
  Lineage l;
  const NodeRef expr = build::binary(Op::Mul, build::rand({5, 7}, 42, DType::F32), Operand::number(2));
  const std::vector<float> first = values(expr);
  const NodeRef leaf = stored_leaf({5, 7});
  REQUIRE(l.record(leaf, expr, [](const Node&) { return false; }));
  const NodeRef again = l.rebuild(leaf->id, [](const NodeRef& n) { return n; });
  REQUIRE(again != nullptr);
  set_value(*again, nullptr);  // computed anew, not read from a cache
  CHECK(values(again) == first);
}

TEST_CASE("engine.store.lineage.stored_inputs_are_held_weakly_and_resolved") {
  Lineage l;
  NodeRef input = stored_leaf({4});
  const std::weak_ptr<const Node> weak = input;
  const NodeRef leaf = stored_leaf({4});
  NodeRef expr = build::binary(Op::Add, Operand(input), Operand::number(1));
  auto is_stored = [&](const Node& n) { return n.id == weak.lock()->id; };
  REQUIRE(l.record(leaf, expr, is_stored));
  expr.reset();  // the expression as the user had it is gone: only the recipe remains
  CHECK(l.inputs(leaf->id).size() == 1);
  // Resolved to a leaf holding data: the rebuilt expression reads it.
  auto data = Value::alloc(DType::F32, {4});
  for (int i = 0; i < 4; ++i) data->data<float>()[i] = static_cast<float>(i);
  const NodeRef with_data = make_source(data, {4}, DType::F32);
  const NodeRef rebuilt = l.rebuild(leaf->id, [&](const NodeRef&) { return with_data; });
  REQUIRE(rebuilt != nullptr);
  CHECK(values(rebuilt) == std::vector<float>{1, 2, 3, 4});
  // An input not available now: no expression.
  CHECK(l.rebuild(leaf->id, [](const NodeRef&) { return NodeRef{}; }) == nullptr);
  // The recipe does not keep its input alive; once the input is gone, forget drops the recipe.
  const uint64_t input_id = input->id;
  input.reset();
  CHECK(weak.expired());
  CHECK(l.rebuild(leaf->id, [](const NodeRef& n) { return n; }) == nullptr);
  l.forget({input_id});
  CHECK_FALSE(l.has(leaf->id));
  CHECK(l.size() == 0);
}

TEST_CASE("engine.store.lineage.file_reads_and_large_held_values_are_not_recorded") {
  Lineage l;
  auto big = Value::alloc(DType::F32, {1 << 19});  // 2 MiB, past kMaxHeldBytes
  std::memset(big->v.byte_ptr(), 0, 1 << 21);
  const NodeRef held = make_source(big, {1 << 19}, DType::F32);
  const NodeRef leaf = stored_leaf({1 << 19});
  CHECK_FALSE(l.record(leaf, build::unary(Op::Exp, held), [](const Node&) { return false; }));
  // A small one is kept with the recipe.
  auto small = Value::alloc(DType::F32, {3});
  const NodeRef s = make_source(small, {3}, DType::F32);
  CHECK(l.record(stored_leaf({3}), build::unary(Op::Exp, s), [](const Node&) { return false; }));
  CHECK(l.size() == 1);
}

TEST_CASE("engine.store.lineage.a_dead_leaf_drops_its_recipe_and_its_readers") {
  Lineage l;
  const NodeRef a = stored_leaf({2});
  const NodeRef b = stored_leaf({2});
  const NodeRef c = stored_leaf({2});
  auto stored = [&](const Node& n) { return n.id == a->id || n.id == b->id; };
  REQUIRE(l.record(b, build::unary(Op::Exp, a), stored));
  REQUIRE(l.record(c, build::binary(Op::Add, Operand(a), Operand(b)), stored));
  CHECK(l.size() == 2);
  l.forget({b->id});  // b's recipe goes, and c's (it reads b)
  CHECK(l.size() == 0);
  // A long rebinding loop leaves nothing behind: each version's recipe goes with it.
  for (int i = 0; i < 100; ++i) {
    const NodeRef v = stored_leaf({2});
    REQUIRE(l.record(v, build::unary(Op::Neg, a), stored));
    l.forget({v->id});
  }
  CHECK(l.size() == 0);
}

TEST_CASE("engine.store.lineage.a_recipe_holds_no_node_of_the_graph") {
  Lineage l;
  std::weak_ptr<const Node> weak_leaf, weak_expr;
  uint64_t id = 0;
  {
    const NodeRef expr = build::rand({3}, 7, DType::F32);
    const NodeRef leaf = stored_leaf({3});
    set_stored(*expr, leaf);  // tp.eval's link from an expression to the leaf it was stored as
    REQUIRE(l.record(leaf, expr, [](const Node&) { return false; }));
    weak_leaf = leaf;
    weak_expr = expr;
    id = leaf->id;
  }
  // Had the recipe kept the expression, the expression would keep the leaf, and the leaf its recipe.
  CHECK(weak_expr.expired());
  CHECK(weak_leaf.expired());
  CHECK(l.rebuild(id, [](const NodeRef& n) { return n; }) != nullptr);  // still a recipe, of nothing stored
}
