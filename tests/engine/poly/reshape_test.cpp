#include <doctest/doctest.h>

#include <set>

#include "engine/ir/node.hpp"
#include "engine/poly/reshape.hpp"
#include "engine/poly/signature.hpp"

using namespace tapestry;
using namespace tapestry::poly;

namespace {

Signature reshape_sig(const Shape& in, const Shape& out) {
  NodeRef x = make_source(nullptr, in, DType::F32);
  NodeRef y = make_node(Op::Reshape, {x}, Attrs{}, out, DType::F32);
  Signature s = signature_of(*y);
  CHECK_MESSAGE(signature_problem(s) == "", to_string(s));
  CHECK(s.input_slice(0, s.space_box()) == Box::of_shape(in));
  CHECK(s.output_slice(s.space_box()) == Box::of_shape(out));
  return s;
}

std::vector<bool> splittable(const Signature& s) {
  std::vector<bool> v;
  for (const IndexDim& d : s.space) v.push_back(d.splittable);
  return v;
}

using Rows = std::vector<std::vector<int64_t>>;

}  // namespace

TEST_CASE("engine.poly.reshape.groups") {
  auto g = reshape_groups({4, 6}, {2, 2, 6});
  REQUIRE(g.size() == 2);
  CHECK(g[0].in_dims == std::vector<int>{0});
  CHECK(g[0].out_dims == std::vector<int>{0, 1});
  CHECK(g[1].in_dims == std::vector<int>{1});
  CHECK(g[1].out_dims == std::vector<int>{2});
  g = reshape_groups({2, 3}, {3, 2});
  REQUIRE(g.size() == 1);
  CHECK(g[0].in_dims == std::vector<int>{0, 1});
  CHECK(g[0].out_dims == std::vector<int>{0, 1});
  g = reshape_groups({2, 1, 3}, {1, 6, 1});
  REQUIRE(g.size() == 1);
  CHECK(g[0].in_dims == std::vector<int>{0, 2});
  CHECK(g[0].out_dims == std::vector<int>{1});
  CHECK(reshape_groups({1}, {}).empty());
  CHECK(g[0].factors == std::vector<int64_t>{2, 3});
  g = reshape_groups({6, 4}, {2, 12});  // 6*4 = 2*12 but 6 != 2: one group of both dims
  REQUIRE(g.size() == 1);
  CHECK(g[0].in_dims.size() == 2);
  // ... yet both sides are products of 2, 3, 4: {2*3, 4} -> {2, 3*4}.
  CHECK(g[0].factors == std::vector<int64_t>{2, 3, 4});
  CHECK(g[0].in_runs == std::vector<std::pair<int, int>>{{0, 1}, {2, 2}});
  CHECK(g[0].out_runs == std::vector<std::pair<int, int>>{{0, 0}, {1, 2}});
  CHECK(reshape_groups({2, 3}, {3, 2})[0].factors.empty());  // 3 is no multiple of 2
}

TEST_CASE("engine.poly.reshape.common_factors_keep_it_splittable") {
  // {4,6} -> {2,12} is {2*2, 6} -> {2, 2*6}: halving the input rows halves the output rows.
  const Signature s = reshape_sig({4, 6}, {2, 12});
  CHECK(s.extents() == Shape{2, 2, 6});
  CHECK(s.inputs[0].proj.A == Rows{{2, 1, 0}, {0, 0, 1}});
  CHECK(s.output.proj.A == Rows{{1, 0, 0}, {0, 6, 1}});
  CHECK(splittable(s) == std::vector<bool>{true, false, false});
  CHECK(s.input_slice(0, Box({1, 0, 0}, {1, 1, 5})) == Box({2, 0}, {3, 5}));
  CHECK(s.output_slice(Box({1, 0, 0}, {1, 1, 5})) == Box({1, 0}, {1, 11}));
}

TEST_CASE("engine.poly.reshape.split_6_to_2x3") {
  const Signature s = reshape_sig({6}, {2, 3});
  CHECK(s.extents() == Shape{2, 3});
  CHECK(s.inputs[0].proj.A == Rows{{3, 1}});  // row-major flattening of the fine dims
  CHECK(s.output.proj.A == Rows{{1, 0}, {0, 1}});
  CHECK(splittable(s) == std::vector<bool>{true, false});
  // Output row 1 is input elements 3..5.
  CHECK(s.input_slice(0, Box({1, 0}, {1, 2})) == Box({3}, {5}));
}

TEST_CASE("engine.poly.reshape.merge_2x3_to_6") {
  const Signature s = reshape_sig({2, 3}, {6});
  CHECK(s.extents() == Shape{2, 3});
  CHECK(s.inputs[0].proj.A == Rows{{1, 0}, {0, 1}});
  CHECK(s.output.proj.A == Rows{{3, 1}});
  CHECK(splittable(s) == std::vector<bool>{true, false});
  CHECK(s.output_slice(Box({0, 0}, {0, 2})) == Box({0}, {2}));
}

TEST_CASE("engine.poly.reshape.mixed_2x3_to_3x2_is_one_whole_dim") {
  const Signature s = reshape_sig({2, 3}, {3, 2});
  REQUIRE(s.rank() == 1);
  CHECK(s.space[0].extent == 6);
  CHECK_FALSE(s.space[0].splittable);
  CHECK(s.inputs[0].proj.A == Rows{{0}, {0}});
  CHECK(s.inputs[0].proj.w == std::vector<int64_t>{2, 3});
  CHECK(s.output.proj.w == std::vector<int64_t>{3, 2});
}

TEST_CASE("engine.poly.reshape.split_first_dim_4x6_to_2x2x6") {
  const Signature s = reshape_sig({4, 6}, {2, 2, 6});
  CHECK(s.extents() == Shape{2, 2, 6});
  CHECK(s.inputs[0].proj.A == Rows{{2, 1, 0}, {0, 0, 1}});
  CHECK(s.output.proj.A == Rows{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}});
  CHECK(splittable(s) == std::vector<bool>{true, false, true});
  // Splitting the outer dim and the 6: input rows 2..3, columns 0..2.
  CHECK(s.input_slice(0, Box({1, 0, 0}, {1, 1, 2})) == Box({2, 0}, {3, 2}));
}

TEST_CASE("engine.poly.reshape.size_one_dims") {
  Signature s = reshape_sig({1, 6}, {6});
  CHECK(s.extents() == Shape{6});
  CHECK(s.inputs[0].proj.A == Rows{{0}, {1}});
  s = reshape_sig({6}, {1, 6, 1});
  CHECK(s.output.proj.A == Rows{{0}, {1}, {0}});
  s = reshape_sig({}, {1, 1});
  CHECK(s.rank() == 0);
  s = reshape_sig({2, 1, 3}, {3, 1, 2});
  CHECK(s.rank() == 1);
  CHECK_FALSE(s.space[0].splittable);
  s = reshape_sig({2, 3, 4}, {6, 4});  // flatten the first two dims (a common case)
  CHECK(splittable(s) == std::vector<bool>{true, false, true});
}

namespace {
// Row-major flat indices of every element of a box of a tensor of `shape`.
std::set<int64_t> flat(const Box& b, const Shape& shape) {
  std::set<int64_t> out;
  if (b.empty()) return out;
  const Strides st = contiguous_strides(shape);
  std::vector<int64_t> p = b.lo;
  while (true) {
    int64_t f = 0;
    for (int d = 0; d < b.rank(); ++d) f += p[d] * st[d];
    out.insert(f);
    int d = b.rank() - 1;
    while (d >= 0 && p[d] == b.hi[d]) p[d] = b.lo[d], --d;
    if (d < 0) break;
    ++p[d];
  }
  return out;
}
}  // namespace

TEST_CASE("engine.poly.reshape.split_blocks_read_exactly_what_they_write") {
  // Halving every splittable dim gives blocks whose input slice holds exactly the elements
  // of their output slice: the model is exact, not a bounding box.
  const std::vector<std::pair<Shape, Shape>> cases = {{{6}, {2, 3}},          {{2, 3}, {6}},
                                                      {{2, 3}, {3, 2}},       {{4, 6}, {2, 2, 6}},
                                                      {{2, 3, 4}, {6, 4}},    {{4, 1, 6}, {24}},
                                                      {{8, 6}, {2, 4, 3, 2}}, {{6, 4}, {2, 12}},
                                                      {{4, 6}, {2, 12}},      {{8, 6}, {4, 12}},
                                                      {{12, 10}, {4, 30}},    {{2, 3, 4, 5}, {6, 20}},
                                                      {{6, 10}, {4, 15}},     {{2, 3, 1, 4}, {4, 3, 2}}};
  for (const auto& [in, out] : cases) {
    CAPTURE(shape_str(in));
    CAPTURE(shape_str(out));
    const Signature s = reshape_sig(in, out);
    // Every block of the 2^k grid that halves the splittable dims of extent >= 2.
    std::vector<int> split;
    for (int j = 0; j < s.rank(); ++j)
      if (s.space[j].splittable && s.space[j].extent >= 2) split.push_back(j);
    for (int mask = 0; mask < (1 << split.size()); ++mask) {
      Box block = s.space_box();
      for (size_t k = 0; k < split.size(); ++k) {
        const int j = split[k];
        const int64_t mid = s.space[j].extent / 2;
        if (mask & (1 << k)) block.lo[j] = mid;
        else block.hi[j] = mid - 1;
      }
      CAPTURE(to_string(block));
      const std::set<int64_t> read = flat(s.input_slice(0, block), in);
      CHECK(read == flat(s.output_slice(block), out));
      CHECK(static_cast<int64_t>(read.size()) == block.volume());
    }
  }
}
