#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <map>

#include "engine/ir/build/builders.hpp"
#include "engine/plan/fuse.hpp"
#include "engine/poly/signature.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/run/run_block.hpp"

using namespace tapestry;
using build::Operand;

namespace {

NodeRef vec(std::initializer_list<float> xs) {
  auto v = Value::alloc(DType::F32, {static_cast<int64_t>(xs.size())});
  float* p = v->data<float>();
  for (float x : xs) *p++ = x;
  return make_source(v, {static_cast<int64_t>(xs.size())}, DType::F32);
}

NodeRef mat(int64_t r, int64_t c, float scale) {
  auto v = Value::alloc(DType::F32, {r, c});
  for (int64_t i = 0; i < r * c; ++i) v->data<float>()[i] = scale * static_cast<float>((i * 7) % 11 - 5);
  return make_source(v, {r, c}, DType::F32);
}

NodeRef un(Op op, const NodeRef& x) { return build::unary(op, x); }
NodeRef bin(Op op, const Operand& a, const Operand& b) { return build::binary(op, a, b); }

// Runs a (fused) graph through run_block, each op as one block over its whole space.
std::vector<std::shared_ptr<Value>> run_whole(const std::vector<NodeRef>& roots) {
  std::map<const Node*, std::shared_ptr<const Value>> vals;
  std::function<std::shared_ptr<const Value>(const Node*)> get = [&](const Node* n) {
    if (n->value) return n->value;
    if (auto it = vals.find(n); it != vals.end()) return it->second;
    const poly::Signature sig = poly::signature_of(*n);
    const poly::Box box = sig.space_box();
    std::vector<View> ins;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const poly::Box need = sig.input_slice(i, box);
      ins.push_back(get(n->inputs[i].get())
                        ->view()
                        .sliced(need.lo, std::vector<int64_t>(need.lo.size(), 1), need.extents()));
    }
    std::shared_ptr<const Value> v = run_block(*n, sig, box, ins);
    vals[n] = v;
    return v;
  };
  std::vector<std::shared_ptr<Value>> out;
  for (const NodeRef& r : roots) out.push_back(std::const_pointer_cast<Value>(get(r.get())));
  return out;
}

bool bitwise_equal(const Value& a, const Value& b) {
  return a.v.shape == b.v.shape && a.v.dtype == b.v.dtype &&
         std::memcmp(a.v.byte_ptr(), b.v.byte_ptr(),
                     static_cast<size_t>(a.v.numel()) * dtype_size(a.v.dtype)) == 0;
}

}  // namespace

TEST_CASE("engine.plan.fuse.a_map_chain_becomes_one_node") {
  NodeRef a = vec({1, 2, 3}), b = vec({4, 5, 6}), c = vec({-4, -10, -18});
  NodeRef y = un(Op::Tanh, bin(Op::Add, bin(Op::Mul, a, b), c));
  const plan::FusedGraph f = plan::fuse({y});
  REQUIRE(f.roots.size() == 1);
  const NodeRef& r = f.roots[0];
  CHECK(r->op == Op::FusedMap);
  CHECK(r->inputs == std::vector<NodeRef>{a, b, c});
  CHECK(r->shape == y->shape);
  CHECK(r->dtype == y->dtype);
  CHECK(describe_fused(*r) == "tanh(x0 * x1 + x2)");
  CHECK(f.fused_ops == 2);
  REQUIRE(f.origin.count(r->id) == 1);
  CHECK(f.origin.at(r->id).back() == y);
  CHECK(f.origin.at(r->id).size() == 3);
  // A pure rewrite: the original graph is unchanged, and the same graph fuses to the same node.
  CHECK(y->op == Op::Tanh);
  CHECK(plan::fuse({y}).roots[0] == r);
  const poly::Signature s = poly::signature_of(*r);
  CHECK(poly::signature_problem(s) == "");
  CHECK(s.flops_per_point == 1 + 1 + 8);  // what the three ops cost unfused
}

TEST_CASE("engine.plan.fuse.a_shared_intermediate_is_not_fused") {
  NodeRef a = vec({1, 2, 3}), b = vec({4, 5, 6});
  NodeRef e = un(Op::Exp, a);
  NodeRef y = bin(Op::Add, un(Op::Tanh, bin(Op::Mul, e, b)), e);  // e read twice
  plan::FusedGraph f = plan::fuse({y});
  REQUIRE(f.roots[0]->op == Op::FusedMap);
  CHECK(f.roots[0]->inputs == std::vector<NodeRef>{e, b});
  CHECK(describe_fused(*f.roots[0]) == "tanh(x0 * x1) + x0");
  // A root is never fused away, even when a map reads it.
  NodeRef z = bin(Op::Mul, a, b), w = un(Op::Sin, z);
  f = plan::fuse({w, z});
  CHECK(f.roots[0] == w);
  CHECK(f.roots[1] == z);
  CHECK(f.fused_ops == 0);
  CHECK(f.origin.empty());
  // Two consumers of one map: it runs once, each consumer reads it.
  NodeRef y1 = un(Op::Exp, z), y2 = un(Op::Cos, z);
  f = plan::fuse({bin(Op::Add, y1, y2)});
  REQUIRE(f.roots[0]->op == Op::FusedMap);
  CHECK(f.roots[0]->inputs == std::vector<NodeRef>{z});
  CHECK(describe_fused(*f.roots[0]) == "exp(x0) + cos(x0)");
}

TEST_CASE("engine.plan.fuse.a_map_chain_into_a_reduction") {
  NodeRef a = mat(3, 4, 0.1f), b = mat(3, 4, 0.2f);
  NodeRef s = build::reduce(Op::Sum, un(Op::Exp, bin(Op::Mul, a, b)), {1}, false);
  const plan::FusedGraph f = plan::fuse({s});
  const NodeRef& r = f.roots[0];
  REQUIRE(r->op == Op::FusedReduce);
  CHECK(r->inputs == std::vector<NodeRef>{a, b});
  CHECK(r->shape == Shape{3});
  CHECK(describe_fused(*r) == "sum(exp(x0 * x1); dims 2)");
  CHECK(f.fused_ops == 2);
  CHECK(f.origin.at(r->id).back() == s);
  const poly::Signature sig = poly::signature_of(*r);
  CHECK(poly::signature_problem(sig) == "");
  CHECK(to_string(sig) == "space {d1:3, d2:4 sum}; in1 (d1, d2); in2 (d1, d2); out (d1); 10 flops/point");
  // A map also read elsewhere stays a value of its own; the reduction reads it.
  NodeRef m = bin(Op::Mul, a, b);
  NodeRef t = build::reduce(Op::Max, m, {0}, false);
  const plan::FusedGraph g = plan::fuse({t, m});
  CHECK(g.roots[0] == t);
  // A constant directly under a reduction is not a map group.
  NodeRef c = build::reduce(Op::Sum, build::full({3, 4}, 2, DType::F32), {0}, false);
  CHECK(plan::fuse({c}).roots[0] == c);
}

TEST_CASE("engine.plan.fuse.constants_are_inlined_and_values_are_leaves") {
  NodeRef a = vec({1, 2, 3});
  NodeRef y = bin(Op::Add, bin(Op::Mul, a, Operand::number(2)), Operand::number(1.5));
  plan::FusedGraph f = plan::fuse({y});
  REQUIRE(f.roots[0]->op == Op::FusedMap);
  CHECK(f.roots[0]->inputs == std::vector<NodeRef>{a});
  CHECK(describe_fused(*f.roots[0]) == "x0 * 2 + 1.5");
  CHECK(f.fused_ops == 1);
  // A node that already holds a value is a leaf: nothing below it is looked at.
  NodeRef m = bin(Op::Sub, a, vec({1, 1, 1}));
  evaluate({m});
  NodeRef z = un(Op::Neg, un(Op::Sqrt, m));
  f = plan::fuse({z});
  REQUIRE(f.roots[0]->op == Op::FusedMap);
  CHECK(f.roots[0]->inputs == std::vector<NodeRef>{m});
  CHECK(describe_fused(*f.roots[0]) == "-sqrt(x0)");
  // A single map is left as it is.
  NodeRef one = un(Op::Exp, a);
  CHECK(plan::fuse({one}).roots[0] == one);
}

TEST_CASE("engine.plan.fuse.describe_parenthesizes") {
  NodeRef a = vec({1, 2}), b = vec({3, 4}), c = vec({5, 6});
  NodeRef y = bin(Op::Mul, bin(Op::Sub, a, bin(Op::Sub, b, c)), un(Op::Neg, bin(Op::Pow, a, b)));
  CHECK(describe_fused(*plan::fuse({y}).roots[0]) == "(x0 - (x1 - x2)) * -x0^x1");  // Lua: -a^b is -(a^b)
  NodeRef w =
      build::where(bin(Op::Gt, a, b), build::cast(bin(Op::Div, a, c), DType::F64), Operand::number(0));
  CHECK(describe_fused(*plan::fuse({w}).roots[0]) == "where(gt(x0, x1), f64(x0 / x2), 0)");
}

TEST_CASE("engine.plan.fuse.groups_are_bounded") {
  NodeRef x = vec({0.5f, -0.25f});
  for (int i = 0; i < 200; ++i) x = un(i % 2 ? Op::Neg : Op::Sin, x);
  const plan::FusedGraph f = plan::fuse({x});
  int nodes = 0;
  std::function<void(const NodeRef&)> walk = [&](const NodeRef& n) {
    if (n->op == Op::Source) return;
    ++nodes;
    if (n->op == Op::FusedMap) CHECK(decode_fused_map(*n).instrs.size() <= 97);
    for (const NodeRef& in : n->inputs) walk(in);
  };
  walk(f.roots[0]);
  CHECK(nodes >= 3);  // 200 maps need several programs
  CHECK(nodes <= 5);
  CHECK(bitwise_equal(
      *run_whole(f.roots)[0], *[&] {
        evaluate({x});
        return x->value;
      }()));
}

TEST_CASE("engine.plan.fuse.fused_roots_compute_what_the_originals_do") {
  NodeRef x = mat(8, 6, 0.3f), w1 = mat(6, 10, 0.1f), b1 = mat(1, 10, 0.5f), w2 = mat(10, 4, 0.2f);
  NodeRef h = un(Op::Relu, bin(Op::Add, build::matmul(x, w1), b1));
  NodeRef z = build::matmul(h, w2);
  NodeRef m = build::reduce(Op::Max, z, {1}, true);
  NodeRef e = un(Op::Exp, bin(Op::Sub, z, m));
  NodeRef p = bin(Op::Div, e, build::reduce(Op::Sum, e, {1}, true));
  NodeRef n2 = build::reduce(Op::Sum, un(Op::Square, bin(Op::Sub, p, Operand::number(0.25))), {}, false);
  NodeRef a = build::argreduce(Op::ArgMax, p, 1, false);
  NodeRef g = build::reduce(Op::Any, bin(Op::Gt, build::transpose(h, 0, 1), Operand::number(1)), {0}, false);
  const std::vector<NodeRef> roots = {p, n2, a, g};
  const plan::FusedGraph f = plan::fuse(roots);
  int fused_nodes = 0;
  for (const auto& [id, members] : f.origin) fused_nodes += static_cast<int>(members.size() > 0);
  CHECK(fused_nodes >= 3);
  CHECK(f.roots[1]->op == Op::FusedReduce);  // sum((p - 0.25)^2)
  const std::vector<std::shared_ptr<Value>> got = run_whole(f.roots);
  evaluate(roots);
  for (size_t i = 0; i < roots.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(*got[i], *roots[i]->value));
  }
}
