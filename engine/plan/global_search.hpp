// The global stage of the search: one candidate per op minimizing node + edge costs, exactly.
//   CostGraph g;  g.node = {{1, 2}, {3, 0}};  g.edges.push_back({0, 1, {0, 5, 5, 0}});
//   const GlobalChoice c = solve(g);   // c.pick == {1, 1}, c.cost == 2, c.exact
// A node cost is an op's own time as one of its candidates; an edge cost is what bringing the
// producer's layout (candidate a) to what the consumer's candidate b reads adds. The optimum of
// their sum is found by variable elimination (min-sum dynamic programming, as OptCNN and
// FlexFlow eliminate the nodes and edges of series-parallel graphs): chains, trees and
// series-parallel graphs never build a table over more than two ops, and any graph whose tables
// stay under `max_table` entries is solved exactly. Past that, an op is eliminated from each of
// its tables on its own (a bound, not the optimum: `exact` is false) and the choice is then
// improved one op at a time until no single change lowers the sum. Ties go to the lower
// candidate index, so the same tables always give the same choice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace tapestry::plan {

struct CostGraph {
  std::vector<std::vector<double>> node;  // [op][candidate]
  struct Edge {
    int a = 0, b = 0;          // ops, a != b
    std::vector<double> cost;  // [ca * node[b].size() + cb]
  };
  std::vector<Edge> edges;
};

// The sum of the node and edge costs of one choice per op.
double total(const CostGraph& g, const std::vector<int>& pick);

struct GlobalChoice {
  std::vector<int> pick;  // per op: a candidate index
  double cost = 0;        // total(g, pick)
  bool exact = true;      // pick is a global optimum of the sum
};

inline constexpr int64_t kMaxTable = int64_t(1) << 20;
GlobalChoice solve(const CostGraph& g, int64_t max_table = kMaxTable);

// A joint move from `pick`: one op to another candidate, each op reading it (an edge from it)
// to its best candidate given that, by the tables, and the readers of a reader that changed in
// turn, three levels down: a producer and its consumers change together.
struct JointMove {
  double delta;                             // the change of total(g, ...) it makes
  std::vector<std::pair<int, int>> change;  // (op, candidate), the moved op first
};
// Every such move, most promising first (by delta; ties in op and candidate order).
std::vector<JointMove> joint_moves(const CostGraph& g, const std::vector<int>& pick);

// Refinement by joint moves costed by a truer cost than the tables (`cost` of a whole choice:
// the exact simulation, or the estimate): moves are tried most promising first, each one that
// lowers `cost` is kept (later moves touching an op already changed wait for the next round),
// and a round ends after `patience` moves in a row that do not. It stops when a round keeps
// none or `more()` says the budget is spent. Deterministic: no randomness, no clock.
template <class Cost, class More>
void refine(const CostGraph& g, std::vector<int>& best, double& best_cost, Cost&& cost, More&& more,
            std::size_t patience) {
  std::set<std::vector<int>> costed{best};
  while (more()) {
    const std::vector<JointMove> moves = joint_moves(g, best);
    std::vector<char> touched(best.size(), 0);
    std::size_t misses = 0;
    bool kept = false;
    for (const JointMove& mv : moves) {
      if (misses == patience || !more()) break;
      bool stale = false;
      for (auto [op, c] : mv.change) stale = stale || touched[op];
      if (stale) continue;
      std::vector<int> st = best;
      for (auto [op, c] : mv.change) st[op] = c;
      if (!costed.insert(st).second) continue;
      const double c = cost(st);
      if (c < best_cost * (1 - 1e-12)) {
        for (auto [op, to] : mv.change) touched[op] = 1;
        best = std::move(st), best_cost = c, kept = true, misses = 0;
      } else {
        ++misses;
      }
    }
    if (!kept) break;
  }
}

}  // namespace tapestry::plan
