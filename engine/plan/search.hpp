// The search: where each op's blocks run, chosen by cost over the joint choice of all ops.
//   Plan p = search(topo, initial, roots, Mesh::modelled(4), {SearchOptions::Anneal, 2000, 0.5, 7});
//   verify(p.graph, topo).ok();   p.cost.total();   p.choice[y->id].name() == "split i/4"
//   for (const Tried& t : p.tried[y->id]) ...   // every candidate of y evaluated, for tp.explain
// Candidates split one or two splittable index dims (parallel: data/model parallel; reduction:
// partial sums + combine) over factors of the rank count, or keep the op whole on one rank.
// Every evaluation is a full lower() + cost_of(), so the cost is exactly what would run — up to
// exact_limit blocks per plan; past it (a big graph on a big mesh) the search runs on per-op
// estimates and lowers only the winner (estimate.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/plan/cost.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/mesh.hpp"

namespace tapestry::plan {

// parts[j] pieces along index dim j, blocks round-robin from `rank`; all 1 = whole on `rank`.
struct Candidate {
  std::vector<int64_t> parts;
  Rank rank = 0;
  std::string name(const poly::Signature& s) const;  // "i/2 x k/2", "whole on rank 3"
  bool operator==(const Candidate&) const = default;
};

// The candidates of one op on `ranks` ranks: whole on ranks 0..min(ranks,8)-1, each splittable
// dim over the largest divisor of `ranks` it can hold, and each pair of dims over a*b == ranks
// with a and b within a factor 32 of each other (on big meshes the lopsided grids are close to
// the one-dim splits already listed, and would only slow the search).
std::vector<Candidate> candidates(const poly::Signature& s, int ranks);
std::vector<Placement> place(const poly::Signature& s, const Candidate& c, int ranks);

struct SearchOptions {
  enum Method { Greedy, Anneal } method = Anneal;
  int steps = 2000;             // annealing moves at most
  double time_budget_s = 1.0;   // and at most this long
  uint64_t seed = 1;
  // Layout constraints (x:constrain): node id -> parts per output dim (1 = not split).
  // Only candidates whose blocks cut the output into exactly that grid are considered.
  std::map<uint64_t, std::vector<int64_t>> output_grid;
  // Ops x ranks beyond which candidates are compared by estimate (estimate.hpp), not lowered.
  int64_t exact_limit = 4096;
};

// The grid a candidate cuts the op's output into: distinct block ranges per output dim.
std::vector<int64_t> output_grid_of(const poly::Signature& s, const std::vector<Placement>& blocks);

struct Tried {
  Candidate candidate;
  double best_total;  // the best plan cost seen with this candidate for the op
};

struct Plan {
  ShardedGraph graph;
  PlanCost cost;
  std::map<uint64_t, Candidate> choice;         // per op with blocks
  std::map<uint64_t, std::vector<Tried>> tried;  // per op: candidates evaluated
  int evaluations = 0;
  bool estimated = false;  // chosen by estimate: `tried` holds estimated totals, `cost` is exact
};

// The ops to place: topo nodes not held in `initial` (Sources must be held).
std::vector<NodeRef> ops_to_place(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial);

// Lowers and costs one joint choice (choice[i] for ops_to_place(...)[i]).
Plan evaluate(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
              const std::vector<NodeRef>& roots, const Mesh& m, const std::vector<Candidate>& choice);

Plan search(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
            const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt = {});

}  // namespace tapestry::plan
