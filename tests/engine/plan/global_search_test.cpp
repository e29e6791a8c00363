#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

#include "engine/plan/global_search.hpp"

using namespace tapestry::plan;

namespace {

// Every joint choice, the cheapest kept (the first of equals, in lexicographic order).
GlobalChoice brute_force(const CostGraph& g) {
  const size_t n = g.node.size();
  std::vector<int> st(n, 0);
  GlobalChoice best{st, INFINITY, true};
  std::function<void(size_t)> rec = [&](size_t i) {
    if (i == n) {
      const double t = total(g, st);
      if (t < best.cost) best.pick = st, best.cost = t;
      return;
    }
    for (size_t c = 0; c < g.node[i].size(); ++c) st[i] = static_cast<int>(c), rec(i + 1);
  };
  rec(0);
  return best;
}

// Random costs over the given edges, 2 to `most` candidates per op; small integers, so that
// ties happen and sums are exact.
CostGraph random_graph(std::mt19937& rng, int n, const std::vector<std::pair<int, int>>& edges,
                       int most = 4) {
  std::uniform_int_distribution<int> size(2, most), value(0, 9);
  CostGraph g;
  for (int i = 0; i < n; ++i) {
    g.node.emplace_back(size(rng));
    for (double& v : g.node.back()) v = value(rng);
  }
  for (auto [a, b] : edges) {
    CostGraph::Edge e{a, b, std::vector<double>(g.node[a].size() * g.node[b].size())};
    for (double& v : e.cost) v = value(rng);
    g.edges.push_back(std::move(e));
  }
  return g;
}

bool single_changes_do_not_help(const CostGraph& g, const std::vector<int>& pick) {
  const double here = total(g, pick);
  for (size_t i = 0; i < g.node.size(); ++i)
    for (size_t c = 0; c < g.node[i].size(); ++c) {
      std::vector<int> st = pick;
      st[i] = static_cast<int>(c);
      if (total(g, st) < here) return false;
    }
  return true;
}

}  // namespace

TEST_CASE("engine.plan.global_search.two_ops") {
  CostGraph g;
  g.node = {{1, 2}, {3, 0}};
  g.edges.push_back({0, 1, {0, 5, 5, 0}});
  const GlobalChoice c = solve(g);
  CHECK(c.pick == std::vector<int>{1, 1});
  CHECK(c.cost == 2);
  CHECK(c.exact);
  g.edges[0] = {1, 0, {0, 5, 5, 0}};  // the same edge stored from the other end
  CHECK(solve(g).pick == std::vector<int>{1, 1});
}

TEST_CASE("engine.plan.global_search.ties_go_to_the_lower_candidate") {
  CostGraph g;
  g.node = {{0, 0, 0}, {0, 0}, {0, 0, 0}};
  g.edges.push_back({0, 1, std::vector<double>(6, 1)});
  g.edges.push_back({1, 2, std::vector<double>(6, 1)});
  CHECK(solve(g).pick == std::vector<int>{0, 0, 0});
}

// The optimum of node + edge costs equals brute force over every joint choice, on chains,
// trees, series-parallel graphs (a diamond, parallel edges) and graphs that are neither.
TEST_CASE("engine.plan.global_search.equals_brute_force") {
  const std::vector<std::pair<const char*, std::pair<int, std::vector<std::pair<int, int>>>>> shapes = {
      {"chain", {6, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}}},
      {"tree", {7, {{0, 1}, {0, 2}, {1, 3}, {1, 4}, {2, 5}, {2, 6}}}},
      {"diamond", {4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}}},
      {"parallel edges", {3, {{0, 1}, {1, 0}, {1, 2}, {0, 2}}}},
      {"attention-like", {6, {{0, 2}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {1, 5}, {0, 5}}}},
      {"complete K5", {5, {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 2}, {1, 3}, {1, 4}, {2, 3}, {2, 4}, {3, 4}}}},
      {"grid 3x3",
       {9, {{0, 1}, {1, 2}, {3, 4}, {4, 5}, {6, 7}, {7, 8}, {0, 3}, {3, 6}, {1, 4}, {4, 7}, {2, 5}, {5, 8}}}},
      {"no edges", {4, {}}},
  };
  std::mt19937 rng(2024);
  for (const auto& [name, shape] : shapes)
    for (int trial = 0; trial < 20; ++trial) {
      CAPTURE(name);
      CAPTURE(trial);
      const CostGraph g = random_graph(rng, shape.first, shape.second);
      const GlobalChoice want = brute_force(g), got = solve(g);
      CHECK(got.exact);
      CHECK(got.cost == want.cost);
      CHECK(total(g, got.pick) == got.cost);
    }
}

// Where a table would pass the limit the result is no longer guaranteed optimal, but it is a
// valid choice no single change improves, never below the optimum, and the same every time.
TEST_CASE("engine.plan.global_search.past_the_table_limit") {
  std::mt19937 rng(7);
  const std::vector<std::pair<int, int>> k5 = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 2},
                                               {1, 3}, {1, 4}, {2, 3}, {2, 4}, {3, 4}};
  int inexact = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const CostGraph g = random_graph(rng, 5, k5);
    const GlobalChoice got = solve(g, 3), again = solve(g, 3);
    inexact += !got.exact;
    REQUIRE(got.pick.size() == 5);
    for (size_t i = 0; i < 5; ++i) CHECK(got.pick[i] < int(g.node[i].size()));
    CHECK(got.cost >= brute_force(g).cost);
    CHECK(single_changes_do_not_help(g, got.pick));
    CHECK(got.pick == again.pick);
  }
  CHECK(inexact == 20);
}

// A chain of 1,000 ops with 20 candidates each (the W9 graph's size) is solved exactly, fast:
// eliminating chain links never builds a table over more than two ops.
TEST_CASE("engine.plan.global_search.long_chain_is_exact") {
  std::mt19937 rng(3);
  std::vector<std::pair<int, int>> chain;
  for (int i = 0; i + 1 < 1000; ++i) chain.push_back({i, i + 1});
  const CostGraph g = random_graph(rng, 1000, chain, 20);
  const GlobalChoice got = solve(g);
  CHECK(got.exact);
  CHECK(single_changes_do_not_help(g, got.pick));
  // The optimum of a chain by the textbook recurrence, left to right.
  std::vector<double> best = g.node[0];
  for (int i = 1; i < 1000; ++i) {
    std::vector<double> next(g.node[i].size(), INFINITY);
    for (size_t b = 0; b < next.size(); ++b)
      for (size_t a = 0; a < best.size(); ++a)
        next[b] = std::min(next[b], best[a] + g.edges[i - 1].cost[a * next.size() + b] + g.node[i][b]);
    best = next;
  }
  CHECK(got.cost == *std::min_element(best.begin(), best.end()));
}
