#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "engine/plan/piece_index.hpp"

using namespace tapestry;
using namespace tapestry::plan;
using poly::Box;

namespace {

// The pieces overlapping q, by brute force: sorted by rank, then in the order added.
std::vector<std::pair<int, uint32_t>> expected(const std::vector<std::pair<Box, int>>& added, const Box& q) {
  std::vector<std::pair<int, uint32_t>> out;
  for (size_t i = 0; i < added.size(); ++i)
    if (poly::overlaps(added[i].first, q)) out.push_back({added[i].second, static_cast<uint32_t>(i)});
  std::sort(out.begin(), out.end());
  return out;
}

Box random_box(std::mt19937& rng, int64_t n, bool whole) {
  if (whole) return Box({0, 0}, {n - 1, n - 1});
  std::uniform_int_distribution<int64_t> at(0, n - 1);
  int64_t a = at(rng), b = at(rng), c = at(rng), d = at(rng);
  return Box({std::min(a, b), std::min(c, d)}, {std::max(a, b), std::max(c, d)});
}

}  // namespace

TEST_CASE("engine.plan.piece_index.matches_a_scan_with_whole_copies_and_small_pieces") {
  // Below the grid, on the grid, across its rebuilds, with whole copies (a broadcast's replicas,
  // kept outside the cells) mixed with small pieces.
  std::mt19937 rng(7);
  const int64_t n = 64;
  PieceIndex ix(Shape{n, n});
  std::vector<std::pair<Box, int>> added;
  for (int i = 0; i < 300; ++i) {
    const Box b = random_box(rng, n, i % 3 == 0);
    const int rank = static_cast<int>(rng() % 50);
    ix.add(b, rank);
    added.push_back({b, rank});
    for (int k = 0; k < 5; ++k) {
      const Box q = random_box(rng, n, k == 0);
      std::vector<std::pair<int, uint32_t>> got;
      for (const PieceIndex::Piece* p : ix.overlapping(q)) got.push_back({p->rank, p->seq});
      REQUIRE(got == expected(added, q));
    }
  }
}
