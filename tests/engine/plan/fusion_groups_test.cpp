#include <doctest/doctest.h>

#include <algorithm>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/fusion_groups.hpp"

using namespace tapestry;

namespace {

NodeRef source(Shape shape) {
  auto v = Value::alloc(DType::F32, shape);
  std::fill_n(v->data<float>(), numel(shape), 1.0f);
  return make_source(v, shape, DType::F32);
}

// Position of node i in the order (inputs come first).
int position(const plan::FusionGroups& g, const NodeRef& n) {
  const int i = g.index_of(n.get());
  return static_cast<int>(std::find(g.order.begin(), g.order.end(), i) - g.order.begin());
}

}  // namespace

TEST_CASE("group_fusion: indices, edges, uses and the fusion rules") {
  const NodeRef a = source({8}), b = source({8});
  const NodeRef prod = build::binary(Op::Mul, a, b);    // inlined into the add
  const NodeRef sum = build::binary(Op::Add, prod, a);  // absorbed by the reduction
  const NodeRef total = build::reduce(Op::Sum, sum, {0}, false);
  plan::FusionGroups g;
  plan::group_fusion({total}, g);

  REQUIRE(g.size() == 5);
  CHECK(g.order.size() == 5);
  for (const NodeRef& n : {a, b, prod, sum}) CHECK(position(g, n) < position(g, total));
  CHECK(position(g, prod) < position(g, sum));

  const int t = g.index_of(total.get()), s = g.index_of(sum.get()), p = g.index_of(prod.get());
  CHECK(g.root[t]);
  CHECK_FALSE(g.root[s]);
  CHECK(g.input(s, 0) == p);
  CHECK(g.input(s, 1) == g.index_of(a.get()));
  CHECK(g.uses[g.index_of(a.get())] == 2);  // read by the product and the sum
  CHECK(g.inlined[p]);
  CHECK_FALSE(g.inlined[s]);  // absorbed by the reduction, not inlined into a map
  CHECK(g.absorbs[t] == s);
  CHECK(g.absorbed_by(total.get()) == sum.get());
  CHECK(g.is_absorbed(sum.get()));
  CHECK(g.is_inlined(prod.get()));
  CHECK(g.fused_maps == 2);
  CHECK(g.index.find(source({8}).get()) == -1);
}

TEST_CASE("group_fusion: a shared map is not inlined, and a reused workspace forgets the last graph") {
  const NodeRef a = source({4});
  const NodeRef sq = build::unary(Op::Square, a);
  const NodeRef x = build::binary(Op::Add, sq, a), y = build::binary(Op::Mul, sq, a);
  plan::FusionGroups g;
  plan::group_fusion({x, y}, g);
  CHECK_FALSE(g.inlined[g.index_of(sq.get())]);  // two consumers
  CHECK(g.uses[g.index_of(sq.get())] == 2);
  CHECK(g.root[g.index_of(x.get())]);
  CHECK(g.root[g.index_of(y.get())]);

  // A second, smaller graph in the same workspace: nothing of the first remains.
  const NodeRef c = source({4});
  const NodeRef neg = build::unary(Op::Neg, c);
  plan::group_fusion({neg}, g);
  CHECK(g.size() == 2);
  CHECK(g.index.find(x.get()) == -1);
  CHECK(g.index.find(sq.get()) == -1);
  CHECK(g.fused_maps == 0);
  CHECK(g.first_edge.size() == 3);
  CHECK(g.input(g.index_of(neg.get()), 0) == g.index_of(c.get()));

  // A node holding a value is a leaf: its inputs are not walked.
  const NodeRef z = build::unary(Op::Exp, neg);
  set_value(*neg, Value::alloc(DType::F32, {4}));
  plan::group_fusion({z}, g);
  CHECK(g.size() == 2);
  CHECK(g.index.find(c.get()) == -1);
  set_value(*neg, nullptr);
}

TEST_CASE("NodeIndex: grows past its first table and clears") {
  std::vector<NodeRef> keep;
  plan::NodeIndex index;
  for (int i = 0; i < 300; ++i) {
    keep.push_back(source({1}));
    CHECK(index.insert(keep.back().get()) == std::pair<int, bool>{i, true});
  }
  CHECK(index.insert(keep[17].get()) == std::pair<int, bool>{17, false});
  for (int i = 0; i < 300; ++i) CHECK(index.find(keep[static_cast<size_t>(i)].get()) == i);
  index.clear();
  CHECK(index.size() == 0);
  CHECK(index.find(keep[5].get()) == -1);
}
