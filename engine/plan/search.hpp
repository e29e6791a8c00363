// The search: where each op's blocks run, chosen by cost over the joint choice of all ops.
//   Plan p = search(topo, initial, roots, Mesh::modelled(4), {SearchOptions::Anneal, 2000, 7});
//   verify(p.graph(), topo).ok();   p.cost.total();   p.choice[y->id].name() == "split i/4"
//   for (const Tried& t : p.tried[y->id]) ...   // every candidate of y evaluated, for tp.explain
// Candidates split one or two splittable index dims (parallel: data/model parallel; reduction:
// partial sums + combine) over factors of the rank count, or keep the op whole on one rank.
// Every evaluation is a full lower() + cost_of(), so the cost is exactly what would run — up to
// exact_limit blocks per plan; past it (a big graph on a big mesh) the search runs on per-op
// estimates and lowers only the winner (estimate.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/plan/cost.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/mesh.hpp"

namespace tapestry::plan {

// parts[j] pieces along index dim j, blocks round-robin from `rank`; all 1 = whole on `rank`.
// A candidate that splits a reduction dim also says where the partials are merged.
struct Candidate {
  poly::Coords parts;
  Rank rank = 0;
  CombineMode combine = CombineMode::Reduce;
  std::string name(const poly::Signature& s) const;  // "i/2 x k/2", "whole on rank 3"
  bool operator==(const Candidate&) const = default;
};

// The candidates of one op on `ranks` ranks: whole on ranks 0..min(ranks,8)-1, each splittable
// dim over the largest divisor of `ranks` it can hold, and each pair of dims over a*b == ranks
// with a and b within a factor 32 of each other (on big meshes the lopsided grids are close to
// the one-dim splits already listed, and would only slow the search). A split of a reduction
// dim comes three times: its partials reduced, all-reduced or reduce-scattered.
std::vector<Candidate> candidates(const poly::Signature& s, int ranks);
std::vector<Placement> place(const poly::Signature& s, const Candidate& c, int ranks);
// Whether the candidate splits a reduction dim (its blocks leave partials).
bool splits_reduction(const poly::Signature& s, const Candidate& c);

// Budgets count work, never seconds, so the same graph, mesh and options give the same plan on
// any machine and under any load.
struct SearchOptions {
  enum Method { Greedy, Anneal } method = Anneal;
  int steps = 2000;  // annealing moves at most
  uint64_t seed = 1;
  // And at most this many blocks and transfers lowered over all the plans costed (each costed
  // plan is lowered whole): a big graph gets fewer moves than a small one.
  int64_t work_budget = 4'000'000;
  // Layout constraints (x:constrain): node id -> parts per output dim (1 = not split).
  // Only candidates whose blocks cut the output into exactly that grid are considered.
  std::map<uint64_t, std::vector<int64_t>> output_grid;
  // Ops x ranks beyond which candidates are compared by estimate (estimate.hpp), not lowered.
  int64_t exact_limit = 4096;
  // What a cached plan was made with besides the graph and mesh (PlanCache keys on it).
  std::vector<int64_t> key() const;
};

// The grid a candidate cuts the op's output into: distinct block ranges per output dim.
std::vector<int64_t> output_grid_of(const poly::Signature& s, const std::vector<Placement>& blocks);

struct Tried {
  Candidate candidate;
  double best_total;  // the best plan cost seen with this candidate for the op
};

// What an estimated plan's sharded graph is lowered from on first use.
struct LoweringInput {
  std::vector<NodeRef> topo;
  std::vector<Shard> initial;
  std::vector<NodeRef> roots;
  Mesh mesh;
};

struct Plan {
  PlanCost cost;
  std::map<uint64_t, Candidate> choice;          // per op with blocks
  std::map<uint64_t, std::vector<Tried>> tried;  // per op: candidates evaluated
  int evaluations = 0;
  // Chosen by estimate (a big graph on a big mesh, past SearchOptions::exact_limit): `cost` and
  // `tried` are estimates, and the sharded graph -- about a million blocks for 1,000 ops on
  // 1,024 ranks -- is lowered from `choice` only when something reads graph(): the run, the
  // verifier, plan:dot. Planning and a cache hit never pay for it.
  bool estimated = false;
  int64_t blocks = 0;  // blocks in the sharded graph, known without lowering it

  // The sharded graph, lowered on first use for an estimated plan (not thread-safe: the first
  // call must not race another). Copies of a plan share it.
  const ShardedGraph& graph() const;
  bool lowered() const { return graph_ != nullptr; }
  void set_graph(ShardedGraph g);
  void defer_lowering(LoweringInput in);  // graph() lowers `choice` from `in` when first asked
  // cost_of(graph(), m): the simulated makespan, exact even where `cost` is an estimate.
  PlanCost exact_cost(const Mesh& m) const;

 private:
  mutable std::shared_ptr<const ShardedGraph> graph_;
  std::shared_ptr<const LoweringInput> input_;
};

// The ops to place: topo nodes not held in `initial` (Sources must be held), but for those
// generated where they are read.
std::vector<NodeRef> ops_to_place(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
                                  const std::vector<NodeRef>& roots);

// Lowers and costs one joint choice (choice[i] for ops_to_place(...)[i]).
Plan evaluate(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
              const std::vector<NodeRef>& roots, const Mesh& m, const std::vector<Candidate>& choice);

Plan search(const std::vector<NodeRef>& topo, const std::vector<Shard>& initial,
            const std::vector<NodeRef>& roots, const Mesh& m, const SearchOptions& opt = {});

}  // namespace tapestry::plan
