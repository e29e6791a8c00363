// Typed op attributes: every struct round-trips through Attrs, builders write what the typed
// accessors read, and an accessor of the wrong family or a malformed Attrs is an internal error.
#include <doctest/doctest.h>

#include "engine/ir/attrs.hpp"
#include "engine/ir/build/builders.hpp"

using namespace tapestry;

namespace {

template <class A> void round_trips(const A& a) {
  CAPTURE(a.encode().ints.size());
  CHECK(A::decode(a.encode()) == a);
}

}  // namespace

TEST_CASE("every attrs struct round-trips through Attrs") {
  round_trips(NoAttrs{});
  round_trips(SourceAttrs{uint64_t(1) << 40});
  round_trips(FullAttrs{DType::I64, 3.0, (int64_t(1) << 60) + 1});
  round_trips(ArangeAttrs{DType::F64, -1.5, 0.25, -1, 0});
  round_trips(LinspaceAttrs{DType::F32, 0, 1});
  round_trips(EyeAttrs{DType::Bool});
  round_trips(RandAttrs{DType::F64, ~uint64_t(0)});
  round_trips(CastAttrs{DType::I32});
  round_trips(ReduceAttrs{{0, 2}});
  round_trips(ArgReduceAttrs{});
  round_trips(ArgReduceAttrs{1});
  round_trips(PermuteAttrs{{2, 0, 1}});
  round_trips(SliceAttrs{{0, 3}, {1, 2}});
  round_trips(ConstrainAttrs{{2, 1}});
  round_trips(CatAttrs{1});
  round_trips(WriteAttrs{{4, 5, 6}});
  round_trips(CorrelateAttrs{{1, 0}, {1, 2}});
  round_trips(Conv2dAttrs{{2, 3}, {1, 0}, {1, 2}, 4});
  round_trips(PoolAttrs{{3, 3}, {2, 1}, {1, 0}});
  round_trips(IndexAttrs{2, IndexFn::ScatterAdd});
}

TEST_CASE("the op table names each op's struct") {
  static_assert(std::is_same_v<attrs_type<Op::Conv2d>, Conv2dAttrs>);
  static_assert(std::is_same_v<attrs_type<Op::Randn>, RandAttrs>);
  static_assert(std::is_same_v<attrs_type<Op::Add>, NoAttrs>);
  static_assert(std::is_same_v<attrs_type<Op::FusedReduce>, FusedReduction>);
  CHECK(carries<PoolAttrs>(Op::MaxPool2d));
  CHECK(carries<PoolAttrs>(Op::AvgPool2d));
  CHECK_FALSE(carries<PoolAttrs>(Op::Conv2d));
}

TEST_CASE("builders write what the typed accessors read") {
  const NodeRef x = build::rand({2, 4, 9, 9}, 7, DType::F32);
  CHECK(attrs_of<RandAttrs>(*x).seed == 7);
  build::Conv2dOptions o;
  o.stride[0] = 2;
  o.padding[1] = 1;
  o.groups = 2;
  const NodeRef w = build::full({6, 2, 3, 3}, 0.5, DType::F32);
  CHECK(attrs_of<FullAttrs>(*w).real == 0.5);
  const Conv2dAttrs c = attrs_of<Conv2dAttrs>(*build::conv2d(x, w, o));
  CHECK(c == Conv2dAttrs{{2, 1}, {0, 1}, {1, 1}, 2});
  const NodeRef s = build::slice(x, {0, 1, 2, 3}, {1, 1, 2, 3}, {2, 3, 4, 2});
  CHECK(attrs_of<SliceAttrs>(*s) == SliceAttrs{{0, 1, 2, 3}, {1, 1, 2, 3}});
  CHECK(attrs_of<ReduceAttrs>(*build::reduce(Op::Sum, x, {3, 1}, false)).dims == std::vector<int>{1, 3});
  CHECK(attrs_of<ArgReduceAttrs>(*build::argreduce(Op::ArgMax, x, std::nullopt, false)).dim == std::nullopt);
  CHECK(attrs_of<CastAttrs>(*build::cast(x, DType::F64)).to == DType::F64);
  CHECK(attrs_of<NoAttrs>(*build::binary(Op::Add, x, x)) == NoAttrs{});
}

TEST_CASE("a wrong family or malformed attrs is an internal error") {
  const NodeRef x = build::rand({3, 4}, 1, DType::F32);
  CHECK_THROWS_AS(attrs_of<Conv2dAttrs>(*x), InternalError);
  CHECK_THROWS_AS(attrs_of<ReduceAttrs>(Op::Permute, Attrs{}), InternalError);
  Attrs bad;
  bad.ints = {1, 2, 3};
  CHECK_THROWS_AS(attrs_of<Conv2dAttrs>(Op::Conv2d, bad), InternalError);
  CHECK_THROWS_AS(attrs_of<SliceAttrs>(Op::Slice, bad), InternalError);
  CHECK_THROWS_AS(attrs_of<FullAttrs>(Op::Full, bad), InternalError);
}
