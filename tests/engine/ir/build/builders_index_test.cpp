// The indexing builders: shapes, dtypes, the views they add for torch's smaller-index cases,
// and the build-time errors (index values are the kernels' to check).
#include <doctest/doctest.h>

#include <string>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"

using namespace tapestry;
using build::Operand;

namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

NodeRef src(const Shape& s, DType t = DType::F32) { return make_source(nullptr, s, t); }

}  // namespace

TEST_CASE("engine.ir.builders.index.gather") {
  const NodeRef x = src({4, 6}, DType::F64);
  NodeRef g = build::gather(x, 1, src({4, 9}, DType::I32));
  CHECK(g->op == Op::Gather);
  CHECK(g->shape == Shape{4, 9});
  CHECK(g->dtype == DType::F64);
  CHECK(g->inputs[0] == x);
  // An index smaller in another dim reads the slice of x it covers.
  g = build::gather(x, 1, src({2, 3}, DType::I64));
  CHECK(g->inputs[0]->op == Op::Slice);
  CHECK(g->inputs[0]->shape == Shape{2, 6});
  CHECK(attrs_of<IndexAttrs>(*g).dim == 1);
  CHECK(error_of([&] { build::gather(x, 1, src({4, 2})); }).find("integer tensor") != std::string::npos);
  CHECK(error_of([&] { build::gather(x, 1, src({4}, DType::I64)); }).find("x's number of dims (2)") !=
        std::string::npos);
  CHECK(error_of([&] {
          build::gather(x, 1, src({5, 2}, DType::I64));
        }) == "index {5,2} is larger than x {4,6} in dim 1 (only dim 2 is indexed)");
}

TEST_CASE("engine.ir.builders.index.scatter") {
  const NodeRef x = src({4, 6});
  NodeRef s = build::scatter(Op::ScatterAdd, x, 0, src({2, 6}, DType::I64), Operand(src({3, 6})),
                             IndexFn::ScatterAdd);
  CHECK(s->op == Op::ScatterAdd);
  CHECK(s->shape == x->shape);
  CHECK(s->inputs[2]->shape == Shape{2, 6});  // src's corner of index's shape
  // A number as src; an index covering a corner of x: scatter there, write the corner back.
  s = build::scatter(Op::Scatter, x, 0, src({2, 3}, DType::I64), Operand::number(1.5), IndexFn::Scatter);
  CHECK(s->op == Op::WriteRegion);
  CHECK(s->inputs[1]->op == Op::Scatter);
  CHECK(s->inputs[1]->shape == Shape{4, 3});
  CHECK(error_of([&] {
          build::scatter(Op::Scatter, x, 0, src({2, 6}, DType::I64), Operand(src({2, 5})), IndexFn::Scatter);
        }) == "src {2,5} is smaller than index {2,6} in dim 2 (src needs a value for every index)");
  CHECK(error_of([&] {
          build::scatter(Op::ScatterAdd, src({3}, DType::Bool), 0, src({1}, DType::I64),
                         Operand::boolean(true), IndexFn::ScatterAdd);
        }).find("numeric") != std::string::npos);
}

TEST_CASE("engine.ir.builders.index.compositions") {
  const NodeRef x = src({3, 4, 5});
  CHECK(build::index_select(x, 1, src({7}, DType::I64))->shape == Shape{3, 7, 5});
  CHECK(build::take(x, src({2, 2}, DType::I32))->shape == Shape{2, 2});
  CHECK(build::index_tensor(x, 2, src({2, 3}, DType::I64))->shape == Shape{3, 4, 2, 3});
  const NodeRef mask = src({3, 4}, DType::Bool);
  CHECK(build::masked_select(x, mask, 5)->shape == Shape{5, 5});
  const NodeRef nz = build::nonzero(mask, 5);
  CHECK(nz->op == Op::Nonzero);
  CHECK(nz->dtype == DType::I64);
  CHECK(build::unravel(nz, {3, 4}).size() == 2);
  CHECK(build::masked_fill(x, mask, Operand::number(0))->op == Op::Where);
  CHECK(build::masked_scatter(x, mask, src({5}), 5)->shape == x->shape);
  CHECK(error_of([&] { build::masked_select(x, src({4}, DType::Bool), 1); }) ==
        "mask {4} must match the leading dims of x {3,4,5}");
  CHECK(error_of([&] { build::masked_scatter(x, mask, src({4}), 5); }).find("cannot be broadcast") !=
        std::string::npos);
  CHECK(error_of([&] {
          build::index_select(x, 0, src({2, 2}, DType::I64));
        }) == "index must be 1-D, got {2,2}");
}
