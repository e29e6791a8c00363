#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <random>
#include <string>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/einsum.hpp"
#include "engine/ir/error.hpp"

using namespace tapestry;
using einsum::Path;
using einsum::Sizes;
using einsum::Spec;

static std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

static bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST_CASE("engine.ir.einsum.parse") {
  Spec s = einsum::parse("ik,kj->ij", 2);
  CHECK(s.inputs == std::vector<std::string>{"ik", "kj"});
  CHECK(s.output == "ij");
  CHECK(einsum::parse("ij,jk", 2).output == "ik");  // implicit: letters seen once, sorted
  CHECK(einsum::parse("ba", 1).output == "ab");
  CHECK(einsum::parse("ii", 1).output == "");  // trace
  CHECK(einsum::parse("bA,Ac", 2).output == "bc");
  CHECK(einsum::parse(" i j , j k -> i k ", 2).output == "ik");
  CHECK(einsum::parse("ij->", 1).output == "");
  CHECK(einsum::parse(",i->i", 2).inputs == std::vector<std::string>{"", "i"});
}

TEST_CASE("engine.ir.einsum.parse_errors") {
  CHECK(contains(error_of([] { einsum::parse("i#,j", 2); }), "bad character '#'"));
  CHECK(contains(error_of([] { einsum::parse("ij,jk->ik", 3); }), "names 2 operands but 3 were"));
  CHECK(contains(error_of([] { einsum::parse("ij->iz", 1); }), "output index 'z' does not appear"));
  CHECK(contains(error_of([] { einsum::parse("ij->ii", 1); }), "'i' appears twice"));
  CHECK(contains(error_of([] { einsum::parse("...i->i", 1); }), "ellipsis"));
  CHECK(contains(error_of([] { einsum::parse("ij->i->j", 1); }), "bad character '-'"));
  CHECK(contains(error_of([] { einsum::parse("ij->i,j", 1); }), "single term"));
}

TEST_CASE("engine.ir.einsum.issue_chain_picks_cheap_order") {
  // 2048x64 . 64x2048 . 2048x64: contracting (jk,kl) first never builds the 2048x2048.
  const Spec s = einsum::parse("ij,jk,kl->il", 3);
  const Sizes sz{{'i', 2048}, {'j', 64}, {'k', 2048}, {'l', 64}};
  const Path p = einsum::optimal_path(s, sz);
  REQUIRE(p.steps.size() == 2);
  CHECK(p.steps[0] == std::pair{1, 2});
  CHECK(p.largest == 2048 * 64);
  CHECK(p.flops == 2.0 * 64 * 2048 * 64 + 2.0 * 2048 * 64 * 64);
  CHECK(p.naive_flops == 3.0 * 2048 * 64 * 2048 * 64);
  CHECK(einsum::greedy_path(s, sz).flops == p.flops);
  CHECK(einsum::path_flops(s, sz, {{0, 1}, {0, 1}}) > 30 * p.flops);

  // The same through the builder, with the steps it lowered.
  auto x = build::full({2048, 64}, 1, DType::F32), y = build::full({64, 2048}, 1, DType::F32);
  const Path q = build::einsum_path("ij,jk,kl->il", {x, y, x});
  CHECK(q.steps == p.steps);
  REQUIRE(q.step_specs.size() == 2);
  CHECK(q.step_specs[0] == "jk,kl->jl");
  CHECK(q.step_specs[1] == "ij,jl->il");
  CHECK(build::einsum("ij,jk,kl->il", {x, y, x})->shape == Shape{2048, 64});
}

// The cheapest order by trying every sequence of pairwise steps.
static double brute_force(const Spec& s, const Sizes& sz) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::pair<int, int>> steps;
  std::function<void(int)> go = [&](int n) {
    if (n == 1) {
      best = std::min(best, einsum::path_flops(s, sz, steps));
      return;
    }
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) {
        steps.emplace_back(i, j);
        go(n - 1);
        steps.pop_back();
      }
    }
  };
  go(static_cast<int>(s.inputs.size()));
  return best;
}

TEST_CASE("engine.ir.einsum.dp_equals_brute_force") {
  std::mt19937 rng(7);
  const std::string letters = "abcdefgh";
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 4);  // 2..5 operands
    Spec s;
    Sizes sz;
    for (char c : letters) sz[c] = 1 + static_cast<int64_t>(rng() % 9);
    std::string all;
    for (int i = 0; i < n; ++i) {
      std::string in;
      const int r = 1 + static_cast<int>(rng() % 3);
      for (int d = 0; d < r; ++d) {
        const char c = letters[rng() % letters.size()];
        if (in.find(c) == std::string::npos) in += c;
      }
      s.inputs.push_back(in);
      all += in;
    }
    for (char c : letters)
      if (all.find(c) != std::string::npos && rng() % 3 == 0) s.output += c;
    const Path p = einsum::optimal_path(s, sz);
    CAPTURE(trial);
    CHECK(p.steps.size() == static_cast<size_t>(n - 1));
    CHECK(p.flops == doctest::Approx(brute_force(s, sz)));
    CHECK(einsum::path_flops(s, sz, p.steps) == p.flops);
    const Path g = einsum::greedy_path(s, sz);  // valid, never better than the optimum
    CHECK(g.flops >= p.flops * (1 - 1e-12));
  }
}

TEST_CASE("engine.ir.einsum.greedy_beyond_six") {
  // A chain of 9 matrices: greedy still avoids the large intermediates.
  Spec s;
  Sizes sz;
  const std::string L = "abcdefghij";
  for (size_t i = 0; i + 1 < L.size(); ++i) {
    s.inputs.push_back(std::string{L[i], L[i + 1]});
    sz[L[i]] = i % 2 ? 1000 : 10;
  }
  sz['j'] = 1000;
  s.output = "aj";
  const Path p = einsum::choose_path(s, sz);
  CHECK(p.steps.size() == 8);
  CHECK(p.largest <= 10 * 1000);
  CHECK(p.flops < p.naive_flops);
}

TEST_CASE("engine.ir.einsum.builder_shapes_and_errors") {
  auto m34 = build::full({3, 4}, 1, DType::F32), m45 = build::full({4, 5}, 1, DType::I32);
  auto y = build::einsum("ij,jk->ik", {m34, m45});
  CHECK(y->shape == Shape{3, 5});
  CHECK(y->dtype == DType::F64);  // promoted as matmul: f32 with i32
  CHECK(build::einsum("ij->ji", {m34})->shape == Shape{4, 3});
  CHECK(build::einsum("ij->", {m34})->shape == Shape{});
  CHECK(build::einsum("ii->i", {build::full({4, 4}, 1, DType::F32)})->shape == Shape{4});
  CHECK(build::einsum("ij,kj->ik", {m34, build::full({1, 4}, 1, DType::F32)})->shape == Shape{3, 1});
  CHECK(build::einsum("i,j", {build::full({3}, 1, DType::F32), build::full({2}, 1, DType::F32)})->shape ==
        Shape{3, 2});
  CHECK(build::tensordot(build::full({2, 3, 4}, 1, DType::F32), build::full({4, 3, 5}, 1, DType::F32), {1, 2},
                         {1, 0})
            ->shape == Shape{2, 5});
  CHECK(build::outer(m34, m45)->shape == Shape{12, 20});

  CHECK(error_of([&] {
          build::einsum("ijk,jk->ik", {m34, m45});
        }) == "operand 1 has 2 dims but 'ijk' names 3 (shape {3,4})");
  const std::string e = error_of([&] { build::einsum("ij,jk->ik", {m34, m34}); });
  CHECK(contains(e, "sizes of index 'j' differ: 4 in operand 1 {3,4} and 3 in operand 2 {3,4}"));
  CHECK(contains(error_of([&] { build::einsum("ii->i", {m34}); }), "repeated index 'i'"));
  CHECK(contains(error_of([&] { build::einsum("ij", {}); }), "at least one operand"));
  CHECK(error_of([&] { build::tensordot(m34, m34, {1}, {1}); }).empty());
  CHECK(contains(error_of([&] { build::tensordot(m34, m34, {1}, {0}); }),
                 "dimension 2 of a (size 4) and dimension 1 of b (size 3) differ"));
}
