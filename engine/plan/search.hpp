// The search: where each op's blocks run, chosen by cost over the joint choice of all ops.
//   Plan p = search(topo, initial, roots, Mesh::modelled(4), {SearchOptions::Anneal, 2000, 7});
//   verify(p.graph(), topo).ok();   p.cost.total();   p.choice[y->id].name() == "split i/4"
//   for (const Tried& t : *p.tried.at(y->id)) ...   // every candidate of y evaluated, for tp.explain
// Candidates split one or two splittable index dims (parallel: data/model parallel; reduction:
// partial sums + combine) over factors of the rank count, or keep the op whole on one rank.
// The start is the global optimum of per-op node and per-edge costs from the estimate
// (global_search.hpp); joint moves then refine it, each costed by a full lower() + cost_of(), so
// the cost is exactly what would run — up to exact_limit blocks per plan; past it (a big graph
// on a big mesh) the moves are costed by the estimate and only the winner is lowered
// (estimate.hpp). Nothing is random and nothing reads a clock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/plan/cost.hpp"
#include "engine/plan/lower.hpp"
#include "engine/plan/mesh.hpp"

namespace tapestry::plan {

// parts[j] pieces along index dim j, blocks round-robin from `rank`; all 1 = whole on `rank`.
// A candidate that splits a reduction dim also says where the partials are merged.
// Replicated: parts all 1, and every rank computes the whole op (a cheap value recomputed where
// it is read instead of moved; tp.replicated()). Its inputs reach every rank, down a tree.
struct Candidate {
  poly::Coords parts;
  Rank rank = 0;
  CombineMode combine = CombineMode::Reduce;
  bool replicated = false;
  // Each block cut into this many along a parallel dim, run one after another on its rank
  // (bands.hpp: an out-of-core plan).
  int bands = 1;
  std::string name(const poly::Signature& s) const;  // "i/2 x k/2", "whole on rank 3", "replicated"
  int64_t block_count(int ranks) const;              // blocks it places on a mesh of `ranks`
  bool operator==(const Candidate&) const = default;
};

// The candidates of one op on `ranks` ranks: whole on ranks 0..min(ranks,8)-1, replicated (for
// a cheap op without reductions on up to kReplicatedRanks ranks, or when asked), each splittable
// dim over the largest divisor of `ranks` it can hold, and each pair of dims over a*b == ranks
// with a and b within a factor 32 of each other (on big meshes the lopsided grids are close to
// the one-dim splits already listed, and would only slow the search). A split of a reduction
// dim comes three times: its partials reduced, all-reduced or reduce-scattered. From
// kThreeDimRanks ranks on, triples of dims too, a*b*c == ranks with each within a factor 8 of
// the others (3-D matmul, batch x head x rows).
inline constexpr int kThreeDimRanks = 512;
inline constexpr double kCheapFlopsPerPoint = 16;
inline constexpr int kReplicatedRanks = 16;
std::vector<Candidate> candidates(const poly::Signature& s, int ranks, bool replicated = false);
std::vector<Placement> place(const poly::Signature& s, const Candidate& c, int ranks);
// Whether the candidate splits a reduction dim (its blocks leave partials).
bool splits_reduction(const poly::Signature& s, const Candidate& c);

// Budgets count work, never seconds, so the same graph, mesh and options give the same plan on
// any machine and under any load.
struct SearchOptions {
  // Global: the global stage, then joint moves (Anneal is its old name: it annealed). Greedy:
  // owner computes (exact meshes) or a greedy with lookahead (estimated ones), nothing more.
  enum Method { Greedy, Global, Anneal = Global } method = Global;
  int steps = 2000;   // joint choices costed at most
  uint64_t seed = 1;  // no stage is random any more; kept because the plan cache keys on it
  // And at most this many blocks and transfers lowered over all the plans costed (each costed
  // plan is lowered whole): a big graph gets fewer moves than a small one.
  int64_t work_budget = 4'000'000;
  // Layout constraints (x:constrain): node id -> parts per output dim (1 = not split).
  // Only candidates whose blocks cut the output into exactly that grid are considered.
  std::map<uint64_t, std::vector<int64_t>> output_grid;
  // And these must be replicated (x:constrain(tp.replicated())): only the replicated candidate.
  std::set<uint64_t> replicated;
  // Ops x ranks beyond which candidates are compared by estimate (estimate.hpp), not lowered;
  // and ranks beyond which they always are: on 1,024 ranks one exact evaluation of even a
  // 2-op graph simulates every rank's program and takes seconds, so 2,000 of them take hours.
  int64_t exact_limit = 4096;
  int exact_ranks = 256;
  // The objective is time plus bytes moved at a price: w seconds per byte, with w set so that
  // moving nothing at all would be worth bytes_weight of the fastest plan's time (the optimum of
  // the time tables, global_search.hpp). Of plans whose times differ by less than that -- less
  // than the estimate's own error against the simulation, 10% on the canonical suite -- the one
  // moving fewer bytes wins: the model prices each link but not the contention of many
  // transfers in one network, which the bytes stand for. 0: time alone.
  double bytes_weight = 0.1;
  // Matmul chains computed in the order the planner's cost picks, not as parenthesized
  // (reassociate.hpp); false keeps every chain as written.
  bool reassociate = true;
  // Bands per rank (bands.hpp): every candidate's blocks cut into this many, run one after
  // another. The planner sets it when a plan on a spilling mesh needs more than its memory.
  int bands = 1;
  // What a cached plan was made with besides the graph and mesh (PlanCache keys on it).
  std::vector<int64_t> key() const;
};

// opt with the layouts the graph's Constrain nodes ask for (x:constrain) on a mesh of `ranks`:
// output_grid and replicated, by node id.
SearchOptions constrained(const std::vector<NodeRef>& topo, int ranks, SearchOptions opt);

// The grid a candidate cuts the op's output into: distinct block ranges per output dim.
std::vector<int64_t> output_grid_of(const poly::Signature& s, const std::vector<Placement>& blocks);

// Whether candidate c of node `id` (its blocks `placed`) gives the layout x:constrain asked for.
bool meets_constraint(uint64_t id, const poly::Signature& s, const Candidate& c,
                      const std::vector<Placement>& placed, const SearchOptions& opt);

// The candidates of node n under its constraint (SearchOptions::output_grid, replicated):
// candidates(), and for a Constrain node (a copy: its index space is its output) the asked grid
// itself, so any grid can be asked for, round-robin when it has more blocks than ranks (tp.grid{2,2,2} on 8
// ranks is a 3-dim split, which candidates() offers only from kThreeDimRanks ranks on).
std::vector<Candidate> candidates_of(const poly::Signature& s, const Node& n, int ranks,
                                     const SearchOptions& opt);

// For tp.explain: why a candidate lost is the difference between its best plan and the
// winner's, split into compute (the busiest rank's), memory (the over-limit penalty) and the
// rest of the makespan, which is communication not hidden behind compute.
struct Tried {
  Candidate candidate;
  double best_total;          // the best plan cost seen with this candidate for the op
  double compute = 0;         // of that plan: the busiest rank's compute seconds
  double memory_penalty = 0;  // of that plan (cost.hpp: kOverMemory when over the limit)
  double communication() const { return std::max(0.0, best_total - memory_penalty - compute); }
};
// What a rejected candidate lost on against the winner: "compute", "communication", "memory",
// or nothing where it costs the same (a tie).
std::string lost_on(const Tried& rejected, const Tried& winner);

// What an estimated plan's sharded graph is lowered from on first use.
struct LoweringInput {
  std::vector<NodeRef> topo;
  std::vector<Shard> initial;
  std::vector<NodeRef> roots;
  Mesh mesh;
};

struct Plan {
  PlanCost cost;
  std::map<uint64_t, Candidate> choice;  // per op with blocks
  // Per op: the candidates evaluated (tp.explain). Shared and immutable: a plan-cache hit
  // re-keys them under the new graph's ids without copying ~1,000 lists.
  std::map<uint64_t, std::shared_ptr<const std::vector<Tried>>> tried;
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
