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

#include <cstdint>
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

}  // namespace tapestry::plan
