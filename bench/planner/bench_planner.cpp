// W9 (docs/benchmarks.md): planning a 1,000-op graph for a modelled 1,024-rank mesh, and a plan-cache hit.
//   bench_planner                         # 200 layers (1,000 ops) on 1,024 ranks, 5 plans, 1,000 hits
//   bench_planner --layers 10 --ranks 16 --reps 2 --hits 10 --rank-layers 4 --rank-ranks 64   # ctest
//   bench_planner --rank-layers 20 --rank-ranks 4096   # (the default) one rank lowering its part of a
//                                                      # 100-op estimated plan on 4,096 ranks; 0: skip
//   BENCH_CHOICES=1 bench_planner ...       # also lists the candidate chosen for every op
//   BENCH_EXACT=1 bench_planner ...         # also lowers the winner and costs it exactly (the run's work)
// Prints the median plan time, the median cache-hit time, and the SUMMA ratio: bytes moved by
// the chosen plan of a large square matmul on 64 ranks over the 2-D SUMMA volume.
// Nothing here is asserted: speed is measured, never a test's pass/fail condition.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "engine/ir/build/builders.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/plan_cache.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/search.hpp"

using namespace tapestry;
using namespace tapestry::plan;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds of this thread: the machine the bench runs on may be shared, and one rank's
// lowering is single-threaded work, so this is what it costs where the rank has a core.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

NodeRef src(const Shape& s) { return make_source(nullptr, s, DType::F32); }

struct Graph {
  std::vector<NodeRef> topo;  // sources first, then the ops in creation order
  std::vector<Shard> initial;
  std::vector<NodeRef> roots;
  int ops = 0;
};

// An MLP-like chain: per layer matmul, bias broadcast and add, relu and tanh (5 ops), so 200 layers are the
// 1,000 ops of W9. The activations start split by rows over the ranks (data parallel), the
// parameters whole on rank 0 (where a named value lies before it is first sharded).
Graph mlp_chain(int layers, int64_t batch, int64_t width, int ranks) {
  Graph g;
  NodeRef x = src({batch, width});
  g.topo.push_back(x);
  for (int r = 0; r < ranks; ++r)
    g.initial.push_back(
        Shard{x->id, Box({r * batch / ranks, 0}, {(r + 1) * batch / ranks - 1, width - 1}), r});
  NodeRef h = x;
  for (int l = 0; l < layers; ++l) {
    NodeRef w = src({width, width}), b = src({width});
    g.topo.push_back(w);
    g.topo.push_back(b);
    g.initial.push_back(Shard{w->id, Box::of_shape(w->shape), 0});
    g.initial.push_back(Shard{b->id, Box::of_shape(b->shape), 0});
    NodeRef y = build::matmul(h, w);
    NodeRef z = build::binary(Op::Add, y, b);
    NodeRef a = build::unary(Op::Relu, z);
    h = build::unary(Op::Tanh, a);
    for (const NodeRef& n : {y, z, a, h}) g.topo.push_back(n);
    g.ops += 4;
  }
  g.roots = {h};
  g.topo = observed_subgraph(g.roots);  // with the nodes the builders add (the bias broadcast)
  g.ops = static_cast<int>(ops_to_place(g.topo, g.initial, g.roots).size());
  return g;
}

// 2-D SUMMA on a sqrt(P) x sqrt(P) grid, A and B held in the same 2-D blocks: rank (a, b) needs
// A's row panel a (n/sqrt(P) x n) and B's column panel b (n x n/sqrt(P)) and already holds one
// n/sqrt(P) x n/sqrt(P) block of each, so it receives 2 (n^2/sqrt(P) - n^2/P) elements and all
// P ranks together 2 n^2 (sqrt(P) - 1).
double summa_bytes(int64_t n, int P, double elem) {
  const double q = std::sqrt(double(P));
  return 2.0 * double(n) * double(n) * (q - 1.0) * elem;
}

// The ratio of the planner's bytes moved to SUMMA's, for C = A B with n x n matrices on P ranks.
double summa_ratio(int64_t n, int P, Plan* out = nullptr) {
  const int q = static_cast<int>(std::lround(std::sqrt(double(P))));
  NodeRef a = src({n, n}), b = src({n, n});
  NodeRef c = build::matmul(a, b);
  std::vector<Shard> initial;
  for (int r = 0; r < P; ++r) {
    const int64_t i = r / q, j = r % q;
    const Box blk({i * n / q, j * n / q}, {(i + 1) * n / q - 1, (j + 1) * n / q - 1});
    initial.push_back(Shard{a->id, blk, r});
    initial.push_back(Shard{b->id, blk, r});
  }
  SearchOptions o;
  o.steps = 2000;
  o.seed = 1;
  Plan p = search(observed_subgraph({c}), initial, {c}, Mesh::modelled(P), o);
  const double ratio = double(p.cost.bytes_moved) / summa_bytes(n, P, 4.0);
  if (out) *out = std::move(p);
  return ratio;
}

// What each rank of a distributed run does with an estimated plan (issue 19): lower its own part
// from the choices. 20 layers of the chain are 100 ops; the slowest of a few ranks is reported.
void lower_one_rank(int layers, int ranks) {
  const Mesh mesh = Mesh::modelled(ranks);
  const Graph g = mlp_chain(layers, int64_t{16} * ranks, 1024, ranks);
  auto t0 = Clock::now();
  const Plan p = search(g.topo, g.initial, g.roots, mesh, {});
  const double plan_s = seconds_since(t0);
  const LoweringInput in{g.topo, g.initial, g.roots, mesh};
  double worst = 0, worst_cpu = 0;
  size_t steps = 0;
  std::vector<ShardedGraph> parts;
  for (Rank r : {0, 1, ranks / 2, ranks - 1}) {
    t0 = Clock::now();
    const double c0 = cpu_seconds();
    const ShardedGraph mine = lower_choice(in, p.choice, r);
    worst_cpu = std::max(worst_cpu, cpu_seconds() - c0);
    worst = std::max(worst, seconds_since(t0));
    steps = std::max(steps, mine.steps[static_cast<size_t>(r)].size());
    parts.push_back(mine);
  }
  std::printf(
      "lower one rank: %d ops on %d modelled ranks (%s plan, %lld blocks, planned in %.2f s): "
      "slowest of 4 ranks %.3f s (%.3f s of CPU), at most %zu steps on a rank\n",
      g.ops, ranks, p.estimated ? "estimated" : "exact", (long long)p.blocks, plan_s, worst, worst_cpu,
      steps);
  if (std::getenv("BENCH_EXACT")) {  // the global lowering it replaces
    t0 = Clock::now();
    const ShardedGraph all = lower_choice(in, p.choice);
    const double all_s = seconds_since(t0);
    bool same = true;
    for (const ShardedGraph& part : parts)
      same = same && to_string(part) == to_string(restrict_to_rank(all, part.part_of));
    std::printf("  lowering every rank: %.3f s, %zu transfers; the 4 ranks' parts are theirs of it: %s\n",
                all_s, all.transfers.size(), same ? "yes" : "NO");
  }
}

}  // namespace

int main(int argc, char** argv) {
  int layers = 200, ranks = 1024, reps = 5, hits = 1000;
  int64_t batch = 16384, width = 1024;
  int64_t budget = SearchOptions{}.work_budget;
  int rank_layers = 20, rank_ranks = 4096;  // issue 19: one rank lowers its part of 100 ops on 4,096
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (k == "--layers") layers = int(v);
    else if (k == "--ranks") ranks = int(v);
    else if (k == "--reps") reps = int(v);
    else if (k == "--hits") hits = int(v);
    else if (k == "--batch") batch = v;
    else if (k == "--width") width = v;
    else if (k == "--budget") budget = v;
    else if (k == "--rank-layers") rank_layers = int(v);
    else if (k == "--rank-ranks") rank_ranks = int(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const Mesh mesh = Mesh::modelled(ranks);
  SearchOptions opt;
  opt.work_budget = budget;
  opt.seed = 1;

  std::vector<double> plan_s, plan_cpu;  // wall clock; this process's CPU (what load does not inflate)
  Plan last;
  int ops = 0;
  for (int r = 0; r < reps; ++r) {
    const Graph g = mlp_chain(layers, batch, width, ranks);  // fresh nodes: no cache involved
    ops = g.ops;
    const auto t0 = Clock::now();
    const std::clock_t c0 = std::clock();
    last = search(g.topo, g.initial, g.roots, mesh, opt);
    plan_s.push_back(seconds_since(t0));
    plan_cpu.push_back(double(std::clock() - c0) / CLOCKS_PER_SEC);
  }
  if (std::getenv("BENCH_CHOICES"))
    for (const NodeRef& n : last.graph().nodes)
      if (last.choice.count(n->id))
        std::printf("  %%%llu %s %s: %s\n", (unsigned long long)n->id, op_def(n->op).name.data(),
                    shape_str(n->shape).c_str(), last.choice.at(n->id).name(poly::signature_of(*n)).c_str());
  std::printf(
      "plan: %d ops on %d modelled ranks: median %.3f s (%.3f s CPU) over %d runs (work budget %lld)\n", ops,
      ranks, median(plan_s), median(plan_cpu), reps, static_cast<long long>(budget));
  std::printf("  plan: %lld blocks, %d evaluations, %s cost %s\n", (long long)last.blocks, last.evaluations,
              last.estimated ? "estimated" : "exact", to_string(last.cost).c_str());
  if (last.estimated && std::getenv("BENCH_EXACT")) {  // what running it would add: lowering every block
    const auto t0 = Clock::now();
    const ShardedGraph& g = last.graph();
    const double lower_s = seconds_since(t0);
    const PlanCost exact = last.exact_cost(mesh);
    std::printf(
        "  lowered in %.3f s: %zu blocks, %zu transfers, %zu combines; exact cost %s (costed in %.3f s)\n",
        lower_s, g.blocks.size(), g.transfers.size(), g.combines.size(), to_string(exact).c_str(),
        seconds_since(t0) - lower_s);
  }

  if (rank_ranks > 0) lower_one_rank(rank_layers, rank_ranks);

  PlanCache cache;
  {
    const Graph g = mlp_chain(layers, batch, width, ranks);
    cache.plan(g.topo, g.initial, g.roots, mesh, opt);
  }
  const Graph again = mlp_chain(layers, batch, width, ranks);  // same structure, new node ids
  std::vector<double> hit_s;
  size_t checksum = 0;
  for (int r = 0; r < hits; ++r) {
    const auto t0 = Clock::now();
    const Plan p = cache.plan(again.topo, again.initial, again.roots, mesh, opt);
    hit_s.push_back(seconds_since(t0));
    checksum += p.choice.size();
  }
  std::printf("cache hit: median %.3f ms over %d hits (%zu hits, %zu misses, %zu)\n", median(hit_s) * 1e3,
              hits, cache.hits(), cache.misses(), checksum);

  Plan mm;
  const int64_t n = 4096;
  const double ratio = summa_ratio(n, 64, &mm);
  std::printf(
      "SUMMA: %lld x %lld matmul on 64 ranks: %lld bytes moved by the plan (%s), %.0f by SUMMA: ratio %.3f\n",
      (long long)n, (long long)n, (long long)mm.cost.bytes_moved,
      mm.choice.empty()
          ? "?"
          : mm.choice.rbegin()->second.name(poly::signature_of(*mm.graph().nodes.back())).c_str(),
      summa_bytes(n, 64, 4.0), ratio);
  return 0;
}
