// tapestry_fuzz: differential fuzzing of the sharded engine against the single-rank evaluator,
// and of the single-rank evaluator against a naive per-op reference (naive.hpp).
//   tapestry_fuzz --seconds 90 --seed 7          # until the budget runs out
//   tapestry_fuzz --graphs 500 --seed 7          # a fixed number of graphs
//   tapestry_fuzz --seed 7 --graph 42            # replay one graph (all its runs)
//   tapestry_fuzz --graphs 20 --emit-lua DIR     # self-checking Lua scripts (the MPI variant)
// Graph g of seed S is drawn from an rng seeded by (S, g) alone, so a failure replays with
// --seed S --graph g. A failure prints the run and a minimized Lua reproducer, also written to
// fuzz-failure-S-g.lua. Exit status 1 if anything failed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "engine/device/sim_backend.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/poly/signature.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/config.hpp"
#include "engine/session/run_sharded.hpp"
#include "engine/shard/rank_program.hpp"
#include "kernels/cpu/kernels.hpp"
#include "tests/fuzz/expected.hpp"
#include "tests/fuzz/naive.hpp"
#include "tests/fuzz/program.hpp"

using namespace tapestry;
using namespace tapestry::fuzz;

namespace {

struct RunConfig {
  int ranks = 1;
  bool modelled = false;
  plan::SearchOptions::Method method = plan::SearchOptions::Greedy;
  uint64_t search_seed = 1;
  int steps = 60;
  // Each rank on a simulated device of its own; odd ranks have no matmul kernel, so device
  // blocks, CPU blocks and the copies between them meet in one plan.
  bool devices = false;
  // A mesh of named axes (tp.mesh{a = 2, b = 2, ...}, outermost first) instead of a flat one:
  // the link per axis changes what the search picks.
  std::vector<int> axes;
  // A joint choice drawn at random instead of searched: every op gets any placement, however
  // costly: whole on a rank, replicated, or split along up to three index dims into any number
  // of parts (several blocks per rank too), a split reduction with any of its combine modes,
  // over inputs laid out at random (whole, in rows, or a copy on every rank). `own_parts`: each
  // rank runs only its own part, lowered from the choices (lower_rank), as under MPI.
  bool random_choice = false;
  bool own_parts = false;
  std::string str() const {
    std::string mesh = modelled ? "modelled" : "this_machine";
    if (!axes.empty()) {
      mesh = "axes";
      for (size_t i = 0; i < axes.size(); ++i) mesh += cat_str(i ? " x " : " ", char('a' + i), "=", axes[i]);
    }
    const std::string how =
        random_choice ? cat_str("random choice ", search_seed, own_parts ? ", each rank its own part" : "")
                      : cat_str(method == plan::SearchOptions::Greedy ? "greedy" : "anneal", " seed ",
                                search_seed, " steps ", steps);
    return cat_str(ranks, " ranks (", mesh, "), ", how, devices ? ", simulated devices" : "");
  }
  plan::Mesh mesh() const {
    if (axes.empty()) return modelled ? plan::Mesh::modelled(ranks) : plan::Mesh::this_machine(ranks);
    std::vector<plan::MeshAxis> ax;
    for (size_t i = 0; i < axes.size(); ++i) {
      plan::MeshAxis m;
      m.name = std::string(1, char('a' + i));
      m.size = axes[i];
      // Outer axes slower, as nodes over gpus: the search then prefers splits along inner ones.
      m.link = {5e9 * double(i + 1), 0.5e-6 / double(i + 1)};
      ax.push_back(m);
    }
    return plan::Mesh::of_axes(ax);
  }
};

struct Counters {
  int64_t graphs = 0, runs = 0, steps = 0, rejected = 0;
  NaiveTally naive;
  int64_t failures = 0, blocks = 0, messages = 0, random_choices = 0, named_meshes = 0;
  std::map<int, int64_t> meshes;
  std::map<std::string, int64_t> kinds;
};

// Where an input lies before a random plan: whole on some rank, cut into rows over the ranks,
// or a copy on every rank, so blocks gather their slices from several pieces.
void hold_somewhere(const Node& n, int ranks, std::mt19937_64& rng, std::vector<plan::Shard>& initial) {
  const poly::Box all = poly::Box::of_shape(n.shape);
  const int mode = n.shape.empty() ? 0 : static_cast<int>(rng() % 3);
  if (mode == 0) {
    initial.push_back({n.id, all, static_cast<int>(rng() % ranks)});
  } else if (mode == 1) {
    const int64_t parts = std::min<int64_t>(ranks, n.shape[0]);
    for (int64_t p = 0; p < parts; ++p) {
      poly::Box b = all;
      b.lo[0] = p * n.shape[0] / parts;
      b.hi[0] = (p + 1) * n.shape[0] / parts - 1;
      initial.push_back({n.id, b, static_cast<int>((p + 1) % ranks)});
    }
  } else {
    for (int r = 0; r < ranks; ++r) initial.push_back({n.id, all, r});
  }
}

// Any placement of an op: whole on a rank, replicated, or up to three splittable index dims
// cut into 2..2*ranks parts in all (so a rank may run several blocks, and hold several
// partials of one combine), blocks from a random first rank, partials merged by any mode.
plan::Candidate random_candidate(const poly::Signature& s, int ranks, std::mt19937_64& rng) {
  plan::Candidate c{std::vector<int64_t>(static_cast<size_t>(s.rank()), 1), static_cast<int>(rng() % ranks)};
  const int pick = static_cast<int>(rng() % 10);
  if (pick == 0) return c;  // whole on one rank
  if (pick == 1) {
    c.rank = 0;
    c.replicated = true;
    return c;
  }
  std::vector<int> dims;
  for (int j = 0; j < s.rank(); ++j)
    if (s.space[j].splittable && s.space[j].extent >= 2) dims.push_back(j);
  std::shuffle(dims.begin(), dims.end(), rng);
  const size_t want = 1 + rng() % 3;  // up to three dims: 3-D matmul's i x j x k
  int64_t total = 1;
  const int64_t cap = ranks == 1 ? 3 : 2 * ranks;
  for (size_t i = 0; i < dims.size() && i < want; ++i) {
    const int64_t room = std::min<int64_t>(s.space[dims[i]].extent, cap / total);
    if (room < 2) break;
    c.parts[dims[i]] = 2 + static_cast<int64_t>(rng() % static_cast<uint64_t>(room - 1));
    total *= c.parts[dims[i]];
  }
  const plan::CombineMode modes[] = {plan::CombineMode::Reduce, plan::CombineMode::AllReduce,
                                     plan::CombineMode::ReduceScatter};
  c.combine = modes[rng() % 3];
  return c;
}

// A random joint choice for `roots`, lowered whole (verified, then run on loopback ranks) or
// by every rank for itself (lower_rank, then each rank runs its own part).
RunReport run_random_choice(const std::vector<NodeRef>& roots, const plan::Mesh& mesh, const RunConfig& cfg,
                            const std::vector<DeviceBackend*>& devices) {
  std::mt19937_64 rng(cfg.search_seed * 0x2545F4914F6CDD1Dull + 17);
  resolve_empty_roots(roots);  // as an observation does: an empty root takes its value unplanned
  plan::LoweringInput in;
  for (const NodeRef& r : roots)  // each once, as an observation lists them
    if (!r->value && std::find(in.roots.begin(), in.roots.end(), r) == in.roots.end()) in.roots.push_back(r);
  if (in.roots.empty()) return {};
  in.topo = plan::observed_subgraph(in.roots);
  in.mesh = mesh;
  for (const NodeRef& n : in.topo) {
    // An empty tensor is held whole on rank 0, as the planner does (engine/plan/planner.cpp): no
    // op has an empty index space, and no grid of blocks cuts one.
    if (numel(n->shape) == 0) in.initial.push_back(plan::Shard{n->id, plan::Box::of_shape(n->shape), 0});
    else if (n->value) hold_somewhere(*n, mesh.ranks, rng, in.initial);
  }
  std::map<uint64_t, plan::Candidate> choice;
  for (const NodeRef& n : plan::ops_to_place(in.topo, in.initial, in.roots))
    choice[n->id] = random_candidate(poly::signature_of(*n), mesh.ranks, rng);
  const plan::ShardedGraph g = plan::lower_choice(in, choice);
  const plan::VerifyResult v = plan::verify(g, in.topo);
  if (!v.ok()) throw InternalError(cat_str("random plan fails verification:\n", v.message()));
  if (!cfg.own_parts) return run_plan(g, {}, devices);
  std::vector<plan::ShardedGraph> parts;
  for (int r = 0; r < mesh.ranks; ++r) parts.push_back(plan::lower_choice(in, choice, r));
  return run_plan_parts(parts, {}, devices);
}

// "" when the sharded run of p under cfg gives `want`, else what differs.
std::string sharded_problem(const Program& p, const RunConfig& cfg, const Expected& want, Counters* c) {
  try {
    std::vector<NodeRef> nodes = build(p);
    std::vector<NodeRef> roots;
    for (int r : p.roots) roots.push_back(nodes[r]);
    const plan::Mesh mesh = cfg.mesh();
    plan::SearchOptions o;
    o.method = cfg.method;
    o.steps = cfg.steps;
    o.work_budget = 200000;
    o.seed = cfg.search_seed;
    std::vector<std::unique_ptr<SimDevice>> sims;
    std::vector<DeviceBackend*> devices;
    for (int r = 0; cfg.devices && r < cfg.ranks; ++r) {
      sims.push_back(std::make_unique<SimDevice>());
      if (r % 2) sims.back()->refuse(Op::Matmul);
      devices.push_back(sims.back().get());
    }
    const RunReport rep = cfg.random_choice ? run_random_choice(roots, mesh, cfg, devices)
                                            : run_sharded(roots, mesh, o, /*verify_plan=*/true, devices);
    for (const auto& sim : sims)
      if (sim->counts().live_bytes != 0)
        return cat_str("device memory left after the run: ", sim->counts().live_bytes);
    if (c) c->blocks += rep.blocks, c->messages += rep.messages;
    for (size_t r = 0; r < roots.size(); ++r) {
      const NodeRef& n = roots[r];
      if (!n->value) return cat_str("root ", r + 1, " has no value");
      const View& v = n->value->view();
      if (v.shape != want.shapes[r] || v.dtype != want.dtypes[r])
        return cat_str("root ", r + 1, ": ", shape_str(v.shape), " ", dtype_name(v.dtype), ", want ",
                       shape_str(want.shapes[r]), " ", dtype_name(want.dtypes[r]));
      const std::vector<double> got = to_doubles(v);
      const double tol = want.tol[r] * scale_of(want.values[r]);
      const bool complex = is_complex(v.dtype);
      for (size_t i = 0; i < got.size(); ++i) {
        const double a = got[i], b = want.values[r][i];
        if ((std::isnan(a) && std::isnan(b)) || a == b) continue;
        if (want.tol[r] > 0 && std::abs(a - b) <= tol) continue;
        if (want.overflow[r] && (!finite_at(got, i, complex) || !finite_at(want.values[r], i, complex)))
          continue;
        return cat_str("root ", r + 1, " element ", i + 1, ": sharded gives ", num_str(a), ", single-rank ",
                       num_str(b));
      }
    }
    return "";
  } catch (const Error& e) {
    // A layout constraint no plan on this mesh can give is a user error, not a wrong result.
    if (std::string(e.what()).find("requested layout") != std::string::npos) return "rejected";
    return cat_str("sharded run threw: ", e.what());
  } catch (const std::exception& e) {
    return cat_str("sharded run threw: ", e.what());
  }
}

// The program with its layout constraints redrawn for a mesh of `ranks`: the rank count's
// prime factors spread over dims that can take them (most runs), else left as drawn.
Program fit_constraints(const Program& p, int ranks, std::mt19937_64& rng, bool keep_some = true) {
  Program q = p;
  std::vector<NodeRef> nodes;
  try {
    nodes = build(p);
  } catch (const Error&) {
    return q;
  }
  for (size_t i = 0; i < q.steps.size(); ++i) {
    Step& s = q.steps[i];
    if (s.kind != Kind::Constrain || s.flag || (keep_some && rng() % 5 == 0)) continue;
    const Shape& shape = nodes[i]->shape;
    std::vector<int64_t> parts(shape.size(), 1);
    int r = ranks;
    for (int f = 2; r > 1 && !shape.empty(); ++f) {
      while (r % f == 0) {
        r /= f;
        for (size_t t = 0; t < shape.size(); ++t) {
          const size_t d = (rng() + t) % shape.size();
          if (parts[d] * f <= shape[d]) {
            parts[d] *= f;
            break;
          }
        }
      }
    }
    s.a = parts;
  }
  return q;
}

// Whether p still fails under cfg (a program that no longer builds does not).
bool still_fails(const Program& p, const RunConfig& cfg) {
  try {
    build(p);
  } catch (const Error&) {
    return false;
  }
  Expected want;
  try {
    want = reference(p, nullptr, nullptr);
  } catch (const std::exception&) {
    return true;  // the reference itself throws: that is the failure
  }
  const std::string problem = sharded_problem(p, cfg, want, nullptr);
  return !problem.empty() && problem != "rejected";
}

// Shrinks a failing program: one root, steps replaced by sources of their shape, sources made
// smaller, dead steps dropped, while it still fails. At most `budget` re-runs.
Program minimize(Program p, const RunConfig& cfg, int budget = 300) {
  auto tries = [&](const Program& q) { return budget-- > 0 && still_fails(prune(q), cfg); };
  if (p.roots.size() > 1)
    for (int r : p.roots) {
      Program q = p;
      q.roots = {r};
      if (tries(q)) {
        p = prune(q);
        break;
      }
    }
  p = prune(p);
  for (bool changed = true; changed && budget > 0;) {
    changed = false;
    std::vector<NodeRef> nodes = build(p);
    for (int i = static_cast<int>(p.steps.size()) - 1; i >= 0 && budget > 0; --i) {
      if (p.steps[i].kind == Kind::Src) continue;
      Program q = p;
      Step s;
      s.kind = Kind::Src;
      s.a = nodes[i]->shape;
      s.dt = nodes[i]->dtype;
      s.n = i;
      q.steps[i] = s;
      if (tries(q)) {
        p = prune(q);
        changed = true;
        break;
      }
    }
    if (changed) continue;
    for (size_t i = 0; i < p.steps.size() && !changed && budget > 0; ++i) {
      if (p.steps[i].kind != Kind::Src) continue;
      for (size_t d = 0; d < p.steps[i].a.size() && !changed; ++d) {
        for (int64_t to : {int64_t{1}, p.steps[i].a[d] / 2, p.steps[i].a[d] - 1}) {
          if (to < 1 || to >= p.steps[i].a[d]) continue;
          Program q = p;
          q.steps[i].a[d] = to;
          if (tries(q)) {
            p = prune(q);
            changed = true;
            break;
          }
        }
      }
    }
  }
  return p;
}

struct Args {
  double seconds = 0;
  int64_t graphs = -1;
  uint64_t seed = 1;
  int64_t only_graph = -1;
  int runs_per_graph = 3;
  int max_ranks = 8;
  bool devices = false;  // half the sharded runs on simulated devices
  std::string emit_lua;
  bool verbose = false;
  GenOptions gen;
};

void usage() {
  std::puts(
      "usage: tapestry_fuzz [--seconds S | --graphs N] [--seed S] [--graph G] [--runs R]\n"
      "                     [--max-ranks K] [--max-steps N] [--max-dim D] [--devices] [--emit-lua DIR] [-v]\n"
      "Random well-typed graphs over the op registry, each evaluated by the single-rank\n"
      "evaluator (every node also checked by a naive reference) and sharded R times on random\n"
      "meshes of 1..K loopback ranks (flat or of named axes) with greedy or searched plans or random\n"
      "joint choices (3-dim splits, replicas, every combine mode); --devices runs half of them\n"
      "with a simulated device per rank. --emit-lua writes each\n"
      "graph as a self-checking Lua script instead (for `mpirun -n 3 tapestry file.lua`).");
}

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (s == "-v") {
      a.verbose = true;
      continue;
    }
    if (s == "--devices") {
      a.devices = true;
      continue;
    }
    if (s == "-h" || s == "--help") return false;
    if (!(v = next())) return false;
    if (s == "--seconds") a.seconds = std::atof(v);
    else if (s == "--graphs") a.graphs = std::atoll(v);
    else if (s == "--seed") a.seed = std::strtoull(v, nullptr, 10);
    else if (s == "--graph") a.only_graph = std::atoll(v);
    else if (s == "--runs") a.runs_per_graph = std::atoi(v);
    else if (s == "--max-ranks") a.max_ranks = std::max(1, std::atoi(v));
    else if (s == "--max-steps") a.gen.max_steps = std::max(2, std::atoi(v));
    else if (s == "--max-dim") a.gen.max_dim = std::max<int64_t>(1, std::atoll(v));
    else if (s == "--emit-lua") a.emit_lua = v;
    else return false;
  }
  if (a.seconds <= 0 && a.graphs < 0 && a.only_graph < 0) a.graphs = 100;
  return true;
}

std::string header(const Args& a, int64_t g, const std::string& what) {
  return cat_str(
      "-- tapestry_fuzz --seed ", a.seed, " --graph ", g, "\n-- ", what,
      "\n-- Run: TAPESTRY_RANKS=3 TAPESTRY_VERIFY=1 tapestry this.lua   (or mpirun -n 3 tapestry this.lua)\n"
      "-- Expected values come from the single-rank evaluator.\n");
}

void report_failure(const Args& a, int64_t g, const Program& p, const RunConfig* cfg,
                    const std::string& problem) {
  std::printf("FAIL seed %llu graph %lld%s: %s\n", static_cast<unsigned long long>(a.seed),
              static_cast<long long>(g), cfg ? (" on " + cfg->str()).c_str() : "", problem.c_str());
  Program m = cfg ? minimize(p, *cfg) : prune(p);
  std::string lua;
  try {
    const Expected want = reference(m, nullptr, nullptr);
    std::string what = cat_str("FAILED: ", problem);
    if (cfg) {
      what += cat_str("\n-- C++ run: ", cfg->str());
      const std::string again = sharded_problem(m, *cfg, want, nullptr);
      if (!again.empty()) what += cat_str("\n-- minimized: ", again);
    }
    for (char& ch : what)
      if (ch == '\n') ch = '\n';
    lua = to_lua(m, want.values, want.tol, header(a, g, what), want.overflow);
  } catch (const std::exception& e) {
    lua = cat_str("-- could not write a reproducer: ", e.what(), "\n");
  }
  const std::string file = cat_str("fuzz-failure-", a.seed, "-", g, ".lua");
  std::ofstream(file) << lua;
  std::printf("--- minimized Lua reproducer (%s) ---\n%s--- end ---\n", file.c_str(), lua.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // The kernels' threads, as a session would set them (TAPESTRY_THREADS; the suite sets 1).
  if (const int n = Config::from_environment().threads; n > 0) cpu::set_num_threads(n);
  Args a;
  if (!parse(argc, argv, a)) {
    usage();
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  Counters c;
  for (int64_t g = a.only_graph >= 0 ? a.only_graph : 0;; ++g) {
    if (a.only_graph >= 0 && g != a.only_graph) break;
    if (a.graphs >= 0 && g >= a.graphs) break;
    if (a.seconds > 0 && elapsed() >= a.seconds) break;
    std::mt19937_64 rng(a.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(g));
    Program p;
    try {
      p = generate(rng, a.gen);
    } catch (const std::exception& e) {  // a builder threw something other than Error
      std::printf("FAIL seed %llu graph %lld: generating threw %s\n", static_cast<unsigned long long>(a.seed),
                  static_cast<long long>(g), e.what());
      ++c.failures;
      continue;
    }
    ++c.graphs;
    c.steps += static_cast<int64_t>(p.steps.size());
    for (const Step& s : p.steps) {
      ++c.kinds[kind_name(s.kind)];
      if (s.kind == Kind::Declare && s.n == 2) ++c.kinds["declare (hermitian)"];
    }
    std::string naive_failure;
    Expected want;
    try {
      want = reference(p, &c.naive, &naive_failure);
    } catch (const std::exception& e) {
      ++c.failures;
      report_failure(a, g, p, nullptr, cat_str("single-rank evaluator threw: ", e.what()));
      continue;
    }
    if (!naive_failure.empty()) {
      ++c.failures;
      report_failure(a, g, p, nullptr, cat_str("naive reference disagrees: ", naive_failure));
    }
    if (!a.emit_lua.empty()) {  // for 3 ranks: the layout constraints fit a mesh of 3
      const std::string file = cat_str(a.emit_lua, "/graph_", a.seed, "_", g, ".lua");
      std::ofstream(file) << to_lua(fit_constraints(p, 3, rng, false), want.values, want.tol,
                                    header(a, g, "differential check"), want.overflow);
      continue;
    }
    for (int k = 0; k < a.runs_per_graph; ++k) {
      RunConfig cfg;
      cfg.ranks = static_cast<int>(rng() % a.max_ranks) + 1;
      cfg.modelled = rng() % 2;
      cfg.method = rng() % 3 == 0 ? plan::SearchOptions::Greedy : plan::SearchOptions::Anneal;
      cfg.search_seed = rng() % 1000;
      cfg.steps = 20 + static_cast<int>(rng() % 100);
      cfg.devices = a.devices && rng() % 2;
      // One run in three on named axes: 2 x 2, 2 x 3, 2 x 2 x 2, ... (the product of the axes is
      // the rank count); one in three a random joint choice (3-dim splits, replicas, every
      // combine mode), half of those lowered by each rank for itself.
      if (rng() % 3 == 0) {
        std::vector<int> axes;
        for (int r = cfg.ranks, f = 2; r > 1;) {
          while (r % f) ++f;
          axes.push_back(f);
          r /= f;
        }
        if (axes.size() >= 2) cfg.axes = axes;
      }
      cfg.random_choice = rng() % 3 == 0;
      cfg.own_parts = cfg.random_choice && rng() % 2;
      ++c.runs;
      if (cfg.random_choice) ++c.random_choices;
      if (!cfg.axes.empty()) ++c.named_meshes;
      ++c.meshes[cfg.ranks];
      const Program q = fit_constraints(p, cfg.ranks, rng);
      std::string problem = sharded_problem(q, cfg, want, &c);
      if (problem == "rejected") {
        ++c.rejected;
        problem.clear();
      }
      if (a.verbose)
        std::printf("graph %lld (%zu steps) on %s: %s\n", static_cast<long long>(g), p.steps.size(),
                    cfg.str().c_str(), problem.empty() ? "ok" : problem.c_str());
      if (!problem.empty()) {
        ++c.failures;
        report_failure(a, g, q, &cfg, problem);
        break;
      }
    }
  }
  std::printf(
      "tapestry_fuzz seed %llu: %lld graphs (%lld steps), %lld sharded runs (%lld blocks, %lld messages), "
      "%lld nodes checked against the naive reference (%lld of unsupported ops), %lld layouts no plan gives, "
      "%lld failures, %.1f s\n",
      static_cast<unsigned long long>(a.seed), static_cast<long long>(c.graphs),
      static_cast<long long>(c.steps), static_cast<long long>(c.runs), static_cast<long long>(c.blocks),
      static_cast<long long>(c.messages), static_cast<long long>(c.naive.checked),
      static_cast<long long>(c.naive.unsupported), static_cast<long long>(c.rejected),
      static_cast<long long>(c.failures), elapsed());
  std::printf("random joint choices: %lld, runs on named-axis meshes: %lld\n",
              static_cast<long long>(c.random_choices), static_cast<long long>(c.named_meshes));
  std::printf("meshes:");
  for (auto [r, n] : c.meshes) std::printf(" %d:%lld", r, static_cast<long long>(n));
  std::printf("\nsteps by kind:");
  for (auto& [k, n] : c.kinds) std::printf(" %s:%lld", k.c_str(), static_cast<long long>(n));
  std::printf("\n");
  return c.failures ? 1 : 0;
}
