// A stored leaf read by a later plan is an initial shard where it lies; observing one gathers it.
#include "engine/session/observe.hpp"

#include <chrono>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine/io/lazy_load.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/plan/memory_limit.hpp"
#include "engine/plan/moves.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/reassociate.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/run/device_eval.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/checkpoint.hpp"
#include "engine/session/recovery.hpp"
#include "engine/session/run_sharded.hpp"
#include "engine/session/session.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"
#include "engine/telemetry/trace.hpp"

namespace tapestry {

namespace {

double seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// "split(1, 4)", "grid{2,2}", "whole on rank 0", "replicated on 4 ranks".
// part: the plan as this rank runs it (its own part on an MPI job), which lists every output.
std::string describe_layout(const plan::PlannedGraph& pg, size_t i, const plan::ShardedGraph& part) {
  try {
    const plan::LayoutInfo li = plan::layout_of(pg, pg.roots[i]->id, &part);
    const std::string g = plan::grid_string(li.grid);
    if (g != "whole") return g;
    std::unordered_set<int> ranks;
    for (const plan::Shard& s : li.shards) ranks.insert(s.rank);
    if (ranks.size() == 1) return cat_str("whole on rank ", *ranks.begin());
    return cat_str("replicated on ", ranks.size(), " ranks");
  } catch (const InternalError&) {  // a note in a footer is not worth failing an observation
    return {};
  }
}

bool on_mpi(Session& s, int ranks) { return ranks > 1 && s.mpi_job_ranks() == ranks; }

// Virtual ranks share the session's device, if it has one.
std::vector<DeviceBackend*> rank_devices(Session& s) {
  if (DeviceBackend* dev = s.device()) return {dev};
  return {};
}

// Plans over MPI when the mesh is the job (rank 0 coordinates); else over virtual ranks.
RunReport run(Session& s, const plan::ShardedGraph& g, const StoreKeys& keys) {
  if (on_mpi(s, g.num_ranks)) return s.coordinator()->run_plan(g, keys);
  return run_plan(g, keys, rank_devices(s), &s.shard_store());
}

// plan: the whole plan that ran, when it is lowered (its moves are counted by kind).
void count(const RunReport& report, const plan::ShardedGraph* whole = nullptr) {
  Stats& st = stats();
  st.blocks_run += static_cast<uint64_t>(report.blocks);
  st.device_blocks += static_cast<uint64_t>(report.device_blocks);
  st.bytes_to_device += static_cast<uint64_t>(report.bytes_to_device);
  st.bytes_from_device += static_cast<uint64_t>(report.bytes_from_device);
  st.messages += static_cast<uint64_t>(report.messages);
  st.bytes_moved +=
      static_cast<uint64_t>(report.transfer_bytes + report.combine_bytes + report.gathered_bytes);
  st.bytes_transfers += static_cast<uint64_t>(report.transfer_bytes);
  st.bytes_combines += static_cast<uint64_t>(report.combine_bytes);
  st.bytes_gathered += static_cast<uint64_t>(report.gathered_bytes);
  st.time_move += report.move_s;
  if (!whole) return;
  static_assert(plan::kMoveKinds == Stats::kMoveKinds);
  for (const plan::MoveGroup& m : plan::classify_moves(*whole).groups) {
    if (m.local()) continue;
    ++st.move_count[static_cast<int>(m.kind)];
    st.move_bytes[static_cast<int>(m.kind)] += static_cast<uint64_t>(m.bytes);
  }
}

// Brings a stored leaf's shards to rank 0 as its value (kept there as a cache).
void gather_stored(Session& ses, const NodeRef& leaf) {
  const StoredLayout* s = ses.stored().layout(leaf->id);
  internal_check(s != nullptr);
  plan::ShardedGraph g(s->ranks);
  g.nodes = {leaf};
  StoreKeys keys;
  for (const plan::Shard& sh : s->shards) {
    g.hold(leaf->id, sh.box, sh.rank);
    keys.initial.push_back(leaf->id);
  }
  for (const plan::Shard& sh : s->shards) g.add_output(leaf->id, sh.box, sh.rank);
  keys.roots.assign(g.roots.size(), 0);
  const std::string layout = describe_shards(s->shards, leaf->shape.size());
  count(run(ses, g, keys));
  ses.layouts().put(leaf->id, layout);
}

bool nothing_stored(Session& s) { return !s.stored().any_materialized() && !s.spill().any_nodes(); }

// The roots with every expression that was stored replaced by its leaf (rebuilt above it),
// so a named value is read, not recomputed.
std::vector<NodeRef> substitute_stored(Session& s, const std::vector<NodeRef>& roots) {
  if (nothing_stored(s)) return roots;
  std::unordered_map<const Node*, NodeRef> done;
  std::vector<std::pair<const Node*, size_t>> stack;
  for (const NodeRef& r : roots) {
    if (done.count(r.get())) continue;
    stack.push_back({r.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (n->value) {
        done[n] = n->shared_from_this();
        stack.pop_back();
        continue;
      }
      if (next == 0) {
        if (NodeRef leaf = n->stored ? n->stored : s.stored().materialized_as(*n)) {
          if (n->stored) s.spill().note_read(leaf);
          done[n] = leaf;
          stack.pop_back();
          continue;
        }
      }
      if (next < n->inputs.size()) {
        const Node* in = n->inputs[next++].get();
        if (!done.count(in)) stack.push_back({in, 0});
        continue;
      }
      std::vector<NodeRef> ins;
      bool same = true;
      for (const NodeRef& in : n->inputs) {
        ins.push_back(done.at(in.get()));
        same = same && ins.back() == in;
      }
      done[n] = same ? n->shared_from_this() : make_node(n->op, std::move(ins), n->attrs, n->shape, n->dtype);
      stack.pop_back();
    }
  }
  std::vector<NodeRef> out;
  for (const NodeRef& r : roots) out.push_back(done.at(r.get()));
  return out;
}

// False only when the roots surely read no stored leaf (a Source without a value): a walk
// over the nodes not computed yet, without bookkeeping, given up (true) past a few hundred
// visits. Most observations read none, and this spares them observed_subgraph.
bool may_read_stored(const std::vector<NodeRef>& roots) {
  const Node* stack[64];
  int top = 0, visits = 0;
  for (const NodeRef& r : roots) {
    if (r->value) continue;
    if (top == 64) return true;
    stack[top++] = r.get();
    while (top > 0) {
      const Node* n = stack[--top];
      if (++visits > 512) return true;
      if (n->op == Op::Source || n->stored) return true;
      for (const NodeRef& in : n->inputs) {
        if (in->value) continue;
        if (top == 64) return true;
        stack[top++] = in.get();
      }
    }
  }
  return false;
}

// A stored tensor whose MPI job was lost with no surviving copy (engine/dist/remote_job.hpp)
// cannot be read: its reader fails with the reason, and the session goes on.
void check_not_lost(Session& s, const std::vector<NodeRef>& roots) {
  if (!s.stored().any_lost()) return;
  for (const NodeRef& n : plan::observed_subgraph(roots))
    if (!n->value)
      if (const std::string* why = s.stored().lost(n->id)) throw Error(*why);
}

// Stored leaves this observation reads that cannot be read where they lie (one rank, or
// stored on another mesh): gathered first. Stored roots are gathered: that is observing them.
void gather_what_must_be_whole(Session& s, const std::vector<NodeRef>& roots, int ranks) {
  if (!may_read_stored(roots)) return;
  for (const NodeRef& n : plan::observed_subgraph(roots)) {
    if (n->value || !s.stored().layout(n->id)) continue;
    const bool root = std::find(roots.begin(), roots.end(), n) != roots.end();
    if (root || ranks == 1 || !s.stored().usable(n->id, ranks)) gather_stored(s, n);
  }
}

// A short anneal: an interactive observation cannot wait seconds for its plan, and the plan
// cache makes a loop pay for it once. Budgets count work, so a plan is the same on any load.
plan::SearchOptions observation_options() {
  plan::SearchOptions opts;
  opts.steps = 300;
  opts.work_budget = 200'000;
  return opts;
}

// One rank evaluates whole values, unless stored pieces may spill (a budget is given) and the
// roots need more than the budget at once: their plan then runs in bands (plan/bands.hpp),
// and its results are kept as stored pieces, as on several ranks. The plan is cached, so
// the run that follows plans nothing anew.
bool runs_in_bands(Session& s, const std::vector<NodeRef>& roots) {
  const plan::Mesh& mesh = s.mesh();
  if (!mesh.spill || mesh.ranks != 1) return false;
  std::vector<NodeRef> todo;
  std::unordered_set<const Node*> seen;
  for (const NodeRef& r : roots)
    if (!r->value && !s.stored().layout(r->id) && seen.insert(r.get()).second) todo.push_back(r);
  return !todo.empty() && s.plan_observed(todo, mesh, observation_options()).bands > 1;
}

// Plans and runs the roots (none holds a value) on `mesh`; keep[i] != 0 keeps root i's
// result in the shard store under that key. Returns the plan's result shards of each root.
std::vector<std::vector<plan::Shard>> run_observation(Session& s, const std::vector<NodeRef>& todo,
                                                      const std::vector<uint64_t>& keep,
                                                      const plan::Mesh& mesh) {
  ++stats().observations;
  const double t_plan = seconds();
  const plan::PlannedGraph pg = s.plan_observed(todo, mesh, observation_options());
  const double t_run = seconds();
  if (trace::enabled())
    trace::record(
        {"phase", "plan", 0, trace::kPhases, t_plan * 1e6, (t_run - t_plan) * 1e6,
         cat_str("\"blocks\":", pg.plan.blocks, ",\"cache_hit\":", pg.cache_hit ? "true" : "false")});
  for (const auto& [id, origin] : pg.fused_origin) stats().fused_ops += origin.size() - 1;
  check_memory_limit(pg.plan, s.memory_per_rank(), pg.mesh.spill);
  // On an MPI job every rank lowers only its own part of the plan from its choices (rank 0 sends
  // just those); rank 0's part lists every input shard, root and output as the whole plan does.
  const bool own_parts = on_mpi(s, pg.mesh.ranks);
  const plan::ShardedGraph part = own_parts ? plan::rank_part(pg, 0) : plan::ShardedGraph{};
  const plan::ShardedGraph& g = own_parts ? part : pg.plan.graph();
  StoreKeys keys;
  keys.initial = s.stored().initial_keys(g);
  if (!keep.empty()) {
    keys.roots.assign(g.roots.size(), 0);
    for (size_t j = 0; j < g.roots.size(); ++j)
      for (size_t i = 0; i < pg.observed.size(); ++i)
        if (pg.roots[i]->id == g.roots[j] && keep[i]) keys.roots[j] = keep[i];
  }
  if (s.config().verify) {  // the whole plan, lowered on rank 0 for it
    const plan::VerifyResult v = plan::verify(pg.plan.graph(), pg.topo);
    if (!v.ok()) throw InternalError(cat_str("the plan fails verification:\n", v.message()));
    // What the workers lower from the choices is their part of the plan verified: so is rank 0's.
    if (own_parts && plan::to_string(plan::lower_choice(plan::lowering_input(pg), pg.plan.choice, 0)) !=
                         plan::to_string(plan::restrict_to_rank(pg.plan.graph(), 0)))
      throw InternalError("rank 0's part lowered from the plan's choices is not its part of the plan");
  }
  const RunReport report = own_parts
                               ? s.coordinator()->run_own_parts({plan::lowering_input(pg), pg.plan.choice}, g,
                                                                keys, pg.plan.blocks)
                               : run(s, g, keys);
  const double t_end = seconds();
  stats().time_run += t_end - t_run;
  if (trace::enabled())
    trace::record({"phase", "run", 0, trace::kPhases, t_run * 1e6, (t_end - t_run) * 1e6,
                   cat_str("\"blocks\":", report.blocks, ",\"messages\":", report.messages,
                           ",\"bytes\":", report.bytes)});
  for (size_t i = 0; i < pg.observed.size(); ++i)
    s.layouts().put(pg.observed[i]->id, describe_layout(pg, i, g));
  count(report, !own_parts || pg.plan.lowered() ? &pg.plan.graph() : nullptr);
  std::vector<std::vector<plan::Shard>> shards(pg.observed.size());
  for (size_t i = 0; i < pg.observed.size(); ++i) {
    for (const plan::Shard& o : g.outputs)
      if (o.tensor == pg.roots[i]->id) shards[i].push_back(o);
    if (pg.roots[i] != pg.observed[i] && pg.roots[i]->value) set_value(*pg.observed[i], pg.roots[i]->value);
  }
  return shards;
}

}  // namespace

void release_unreferenced(Session& s) {
  if (!s.placements().empty()) s.sweep_placements();
  const std::vector<uint64_t> gone = s.stored().sweep();
  for (uint64_t k : gone) s.shard_store().drop(k);
  if (Job* job = s.coordinator()) job->drop_on_workers(gone);
}

namespace {

void observe_values_once(Session& s, const std::vector<NodeRef>& given) {
  const TelemetryScope in(s.telemetry());
  s.sync_job_ranks();
  release_unreferenced(s);
  const plan::Mesh& mesh = s.mesh();
  // With nothing stored the roots are the given ones, not a copy (five observations a CG step).
  std::vector<NodeRef> substituted;
  const bool same = nothing_stored(s);
  if (!same) substituted = substitute_stored(s, given);
  const std::vector<NodeRef>& roots = same ? given : substituted;
  check_not_lost(s, roots);
  resolve_empty_roots(roots);  // an empty root takes its value without a plan
  gather_what_must_be_whole(s, roots, mesh.ranks);
  // The file bytes the loads of this observation read, for the progress bar (if one listens).
  const ExpectIo io(s.telemetry().progress_listener ? io::load_bytes(roots, s.mpi_job_ranks()) : 0);
  if (mesh.ranks == 1) {
    // Matmul chains in the order the cost model picks, as a plan on several ranks computes them
    // (plan/reassociate.hpp); the values go to the roots as given.
    // (A graph with no product of products, such as each of a CG iteration's five, skips the
    // call and the copy of its roots.)
    const bool chains = plan::may_have_chains(roots);
    const plan::Reassociated r =
        chains ? plan::reassociate(roots, {}, mesh, {}, {}, /*explain=*/false) : plan::Reassociated{};
    const std::vector<NodeRef>& run = chains ? r.roots : roots;
    const Spill::Pin pin(s.spill(), run);  // what it reads is not spilled while it runs
    if (DeviceBackend* dev = s.device()) evaluate_on_device(run, *dev, s.device_copies());
    else evaluate(run);
    for (size_t i = 0; chains && i < roots.size(); ++i)
      if (r.roots[i] != roots[i] && !roots[i]->value) set_value(*roots[i], r.roots[i]->value);
  } else {
    // The kept device copies serve single-rank observations only: a sharded run gets the device.
    if (DeviceCopies* copies = s.device_copies()) copies->clear();
    std::vector<NodeRef> todo;  // each root once (a plan lists an output once)
    std::unordered_set<const Node*> seen;
    for (const NodeRef& r : roots)
      if (!r->value && seen.insert(r.get()).second) todo.push_back(r);
    if (!todo.empty()) run_observation(s, todo, {}, mesh);
  }
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i] == roots[i] || given[i]->value) continue;
    set_value(*given[i], roots[i]->value);
    const std::string l = s.layouts().find(roots[i]->id);
    if (!l.empty()) s.layouts().put(given[i]->id, l);
  }
  // One rank: what observations computed is what may be spilled when memory runs short.
  if (mesh.ranks == 1)
    for (const NodeRef& g : given) s.spill().note(g);
}

}  // namespace

void observe_values(Session& s, const std::vector<NodeRef>& given) {
  with_recovery(s, [&] { observe_values_once(s, given); });
}

std::vector<NodeRef> as_observed(Session& s, const std::vector<NodeRef>& roots) {
  return s.mesh().ranks == 1 ? roots : substitute_stored(s, roots);
}

void observe_kept(Session& s, const std::vector<NodeRef>& given) {
  s.sync_job_ranks();
  // (Without spilling nothing runs in bands: the substitution is skipped, 3 a CG iteration.)
  const plan::Mesh& mesh = s.mesh();
  if (mesh.ranks == 1 && (!mesh.spill || !runs_in_bands(s, substitute_stored(s, given))))
    return observe_values(s, given);
  std::vector<NodeRef> todo;
  for (const NodeRef& r : given)
    if (!r->value && !r->stored && !s.stored().layout(r->id)) todo.push_back(r);
  const std::vector<NodeRef> out = observe_stored(s, todo);
  for (size_t i = 0; i < todo.size(); ++i)
    if (out[i] != todo[i] && !todo[i]->value && s.stored().layout(out[i]->id)) set_stored(*todo[i], out[i]);
}

namespace {

std::vector<NodeRef> observe_stored_once(Session& s, const std::vector<NodeRef>& given) {
  const TelemetryScope in(s.telemetry());
  s.sync_job_ranks();
  release_unreferenced(s);
  const plan::Mesh& mesh = s.mesh();
  std::vector<NodeRef> out = substitute_stored(s, given);
  check_not_lost(s, out);
  resolve_empty_roots(out);
  if (mesh.ranks == 1 && !runs_in_bands(s, out)) {
    observe_values(s, out);
    return out;
  }
  std::vector<NodeRef> todo, leaves;
  std::vector<uint64_t> keep;
  std::unordered_map<const Node*, size_t> index;
  for (const NodeRef& r : out) {
    if (r->value || s.stored().layout(r->id) || index.count(r.get())) continue;
    index[r.get()] = todo.size();
    todo.push_back(r);
    leaves.push_back(s.stored().new_leaf(r->shape, r->dtype));
    keep.push_back(leaves.back()->id);
  }
  if (todo.empty()) return out;
  // Inputs of this plan that cannot be read where they lie are gathered first.
  for (const NodeRef& n : plan::observed_subgraph(todo))
    if (!n->value && s.stored().layout(n->id) && !s.stored().usable(n->id, mesh.ranks)) gather_stored(s, n);
  const ExpectIo io(s.telemetry().progress_listener ? io::load_bytes(todo, s.mpi_job_ranks()) : 0);
  const auto shards = run_observation(s, todo, keep, mesh);
  // A driver's job may be lost and replaced: each stored tensor keeps the expression it was
  // computed from while its inputs live, to be computed again if no copy of it survives.
  const bool lineage = s.coordinator() && s.coordinator()->replaceable();
  for (size_t i = 0; i < todo.size(); ++i) {
    s.stored().register_stored(leaves[i], shards[i], mesh.ranks);
    s.layouts().put(leaves[i]->id, describe_shards(shards[i], leaves[i]->shape.size()));
    if (lineage)
      s.stored().lineage().record(
          leaves[i], todo[i], [&](const Node& n) { return !n.value && s.stored().layout(n.id) != nullptr; });
  }
  for (size_t i = 0; i < out.size(); ++i) {
    auto it = index.find(out[i].get());
    if (it == index.end()) continue;
    s.stored().record_materialized(given[i], leaves[it->second]);
    s.stored().record_materialized(out[i], leaves[it->second]);
    out[i] = leaves[it->second];
  }
  return out;
}

}  // namespace

std::vector<NodeRef> observe_stored(Session& s, const std::vector<NodeRef>& given) {
  return with_recovery(s, [&] { return observe_stored_once(s, given); });
}

namespace {

// While a binding of tp.env or a tp.detach is computed, what it stores gets buddy replicas
// (Session::binding_names).
struct BindingNames {
  Session& s;
  explicit BindingNames(Session& ses) : s(ses) { s.binding_names(true); }
  ~BindingNames() { s.binding_names(false); }
  BindingNames(const BindingNames&) = delete;
  BindingNames& operator=(const BindingNames&) = delete;
};

}  // namespace

std::vector<NodeRef> observe_detached(Session& s, const std::vector<NodeRef>& given) {
  const BindingNames named(s);
  return observe_stored(s, given);
}

void recompute_stored(Session& s, const NodeRef& leaf, const NodeRef& expr) {
  const TelemetryScope in(s.telemetry());
  if (expr->value) {  // the driver holds it: the leaf holds it too (as a gathered one does)
    set_value(*leaf, expr->value);
    s.stored().unmark_lost(leaf->id);
    return;
  }
  const plan::Mesh& mesh = s.mesh();
  for (const NodeRef& n : plan::observed_subgraph({expr}))
    if (!n->value && s.stored().layout(n->id) && !s.stored().usable(n->id, mesh.ranks)) gather_stored(s, n);
  const auto shards = run_observation(s, {expr}, {leaf->id}, mesh);
  s.stored().register_stored(leaf, shards[0], mesh.ranks);
  s.layouts().put(leaf->id, describe_shards(shards[0], leaf->shape.size()));
}

void materialize(Session& s) {
  Environment& env = s.env();
  if (!env.has_pending()) {  // every observation asks: keep it cheap
    release_unreferenced(s);
    return io::maybe_checkpoint(s);
  }
  // One at a time, so a failing binding names itself and cannot block the others. A binding of
  // the author now running that fails is this observation's error; another author's is
  // dropped and kept for them (Environment::take_failures), and this observation goes on.
  std::optional<Error> own;
  for (const std::string& name : env.pending_names()) {
    const Environment::Entry& e = env.entries().at(name);
    const int author = e.author;
    NodeRef stored;
    try {
      // Kept sharded where computed; the previous version's shards stay until no one reads them.
      // A named tensor's pieces get buddy replicas (a driver's job), unnamed results do not.
      const BindingNames named(s);
      stored = observe_stored(s, {e.pending})[0];
      // Already stored without a replica (tp.env.u = tp.eval(...)): copied before the old
      // binding, which may hold its lineage's inputs, goes.
      replicate_for_binding(s, stored);
    } catch (const Error& err) {
      env.settle(name, nullptr);
      Error failure(cat_str("computing tp.env.", name, ": ", err.what(),
                            " (the new binding was dropped; any previous value is kept)"));
      if (author != env.author()) env.add_failure({name, failure.what(), author});
      else if (!own) own = failure;
      else env.add_failure({name, failure.what(), author});
      continue;
    }
    env.settle(name, std::move(stored));
  }
  release_unreferenced(s);
  if (own) throw *own;
  io::maybe_checkpoint(s);
}

}  // namespace tapestry
