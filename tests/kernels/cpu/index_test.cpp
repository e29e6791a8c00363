// run_index and the shared index arithmetic: 1-based and negative positions, strided and
// broadcast views, repeats (last write wins, adds accumulate), range errors naming the value.
#include <doctest/doctest.h>

#include "engine/ir/attrs.hpp"
#include "helpers.hpp"
#include "kernels/index.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

Attrs at(int dim, IndexFn fn = IndexFn::Gather) { return IndexAttrs{dim, fn}.encode(); }

}  // namespace

TEST_CASE("kernels.index.position") {
  CHECK(fn::index_position(1, 5) == 0);
  CHECK(fn::index_position(5, 5) == 4);
  CHECK(fn::index_position(-1, 5) == 4);
  CHECK(fn::index_position(-5, 5) == 0);
  CHECK(fn::index_position(0, 5) == -1);
  CHECK(fn::index_position(6, 5) == -1);
  CHECK(fn::index_position(-6, 5) == -1);
}

TEST_CASE("kernels.index.gather_strided") {
  // x {2,3} read transposed as {3,2}; gather along dim 2 (0-based 1) with i32 indices.
  auto x = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const View xt = x->view().permuted({1, 0});  // [[1,4],[2,5],[3,6]]
  auto idx = tensor<int32_t>({3, 2}, {2, 1, -1, -2, 1, 1});
  auto out = Value::alloc(DType::F32, {3, 2});
  cpu::run_index(Op::Gather, at(1), {xt, idx->view()}, out->view());
  const auto v = values<float>(out->view());
  const float want[] = {4, 1, 5, 2, 3, 3};
  for (int i = 0; i < 6; ++i) CHECK(v[i] == want[i]);
}

TEST_CASE("kernels.index.gather_broadcast_index") {
  // index_select's form: a {1,2} index expanded to {3,2} (stride 0 along dim 1).
  auto x = tensor<int64_t>({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  auto idx = tensor<int64_t>({1, 2}, {4, 2});
  auto out = Value::alloc(DType::I64, {3, 2});
  cpu::run_index(Op::Gather, at(1), {x->view(), idx->view().expanded({3, 2})}, out->view());
  const auto v = values<int64_t>(out->view());
  const int64_t want[] = {3, 1, 13, 11, 23, 21};
  for (int i = 0; i < 6; ++i) CHECK(v[i] == want[i]);
}

TEST_CASE("kernels.index.scatter_repeats") {
  auto x = tensor<double>({2, 3}, {1, 1, 1, 1, 1, 1});
  auto idx = tensor<int64_t>({2, 2}, {3, 3, 1, -3});
  auto src = tensor<double>({2, 2}, {10, 20, 30, 40});
  auto out = Value::alloc(DType::F64, {2, 3});
  cpu::run_index(Op::Scatter, at(1), {x->view(), idx->view(), src->view()}, out->view());
  auto v = values<double>(out->view());
  const double set[] = {1, 1, 20, 40, 1, 1};  // the last of the repeats wins
  for (int i = 0; i < 6; ++i) CHECK(v[i] == set[i]);
  cpu::run_index(Op::ScatterAdd, at(1), {x->view(), idx->view(), src->view()}, out->view());
  v = values<double>(out->view());
  const double add[] = {1, 1, 31, 71, 1, 1};
  for (int i = 0; i < 6; ++i) CHECK(v[i] == add[i]);
}

TEST_CASE("kernels.index.out_of_range_names_the_value") {
  auto x = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto idx = tensor<int64_t>({2, 1}, {1, 4});
  auto out = Value::alloc(DType::F32, {2, 1});
  try {
    cpu::run_index(Op::Gather, at(1, IndexFn::Take), {x->view(), idx->view()}, out->view());
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("tp.take: index 4 is out of range for dim 2 of size 3") !=
          std::string::npos);
  }
}

TEST_CASE("kernels.index.nonzero") {
  auto m = tensor<bool>({2, 3}, {false, true, true, false, false, true});
  const View mt = m->view().permuted({1, 0});  // [[f,f],[t,f],[t,t]]: row-major of the view
  auto out = Value::alloc(DType::I64, {3});
  cpu::run_index(Op::Nonzero, Attrs{}, {mt}, out->view());
  const auto v = values<int64_t>(out->view());
  CHECK(v[0] == 3);
  CHECK(v[1] == 5);
  CHECK(v[2] == 6);
}
