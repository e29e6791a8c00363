#include "engine/session/recovery.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

#include "engine/io/npy.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/planner.hpp"
#include "engine/session/checkpoint.hpp"
#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "engine/telemetry/trace.hpp"

namespace tapestry {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 8; ++i) s += cat_str(i ? ", " : "", names[i]);
  if (names.size() > 8) s += cat_str(", ... (", names.size() - 8, " more)");
  return s;
}

// recover_lost calls within each other (a loss while recovering): the depth.
int g_depth = 0;

struct Depth {
  Depth() { ++g_depth; }
  ~Depth() { --g_depth; }
};

}  // namespace

void recover_lost(Session& s, const JobReplaced& r) {
  s.sync_job_ranks();
  if (g_depth > 0) throw r;  // within a recovery (its recomputation's observation): the outer one goes on
  const Depth depth;
  const TelemetryScope in(s.telemetry());  // its counters and trace, as the observation's
  const auto t0 = std::chrono::steady_clock::now();
  // Every leaf still lost: this loss's and any an earlier recovery could not bring back (a
  // later checkpoint, or inputs recovered since, may hold it now).
  std::vector<std::weak_ptr<const Node>>& pending = s.lost_leaves();
  for (const NodeRef& n : r.lost) pending.push_back(n);
  std::vector<NodeRef> lost;
  for (const auto& w : pending)
    if (NodeRef n = w.lock(); n && s.stored().lost(n->id)) lost.push_back(std::move(n));
  std::sort(lost.begin(), lost.end(), [](const NodeRef& a, const NodeRef& b) { return a->id < b->id; });
  lost.erase(std::unique(lost.begin(), lost.end()), lost.end());
  if (lost.empty()) return pending.clear();

  // Inputs are older than what reads them: in id order, a recipe's lost inputs came back first.
  auto present = [&s](const NodeRef& input) -> NodeRef {
    return s.stored().lost(input->id) ? nullptr : input;
  };
  std::vector<std::string> by_lineage, by_checkpoint, still, failed;
  std::vector<std::weak_ptr<const Node>> left;
  const std::string ckpt_dir = s.last_checkpoint().dir;
  for (const NodeRef& leaf : lost) {
    const std::string name = s.names_of(leaf->id);
    const std::string label = name.empty() ? cat_str("%", leaf->id) : name;
    if (leaf->value) {  // gathered to the driver before the loss: it holds the value
      s.stored().unmark_lost(leaf->id);
      continue;
    }
    const NodeRef expr = s.stored().lineage().rebuild(leaf->id, present);
    const bool in_checkpoint = !s.last_checkpoint().file_of(leaf->id).empty();
    double lineage_s = std::numeric_limits<double>::infinity(), checkpoint_s = lineage_s;
    if (expr) {
      plan::SearchOptions opts;
      opts.steps = 300;
      opts.work_budget = 200'000;
      try {
        lineage_s = s.plan_observed({expr}, s.mesh(), opts).plan.cost.time;
      } catch (const Error&) {  // no plan fits: the checkpoint, if any
      }
    }
    if (in_checkpoint)
      checkpoint_s = static_cast<double>(numel(leaf->shape) * dtype_size(leaf->dtype)) / kCheckpointReadRate;
    bool done = false;
    std::string why;
    // The cheaper first; the other if it fails (a file gone, a plan that does not fit).
    for (int pass = 0; pass < 2 && !done; ++pass) {
      const bool use_lineage = (pass == 0) == (lineage_s <= checkpoint_s);
      try {
        if (use_lineage && expr && lineage_s < std::numeric_limits<double>::infinity()) {
          recompute_stored(s, leaf, expr);
          ++s.recovered().restored_from_lineage;
          by_lineage.push_back(label);
          done = true;
        } else if (!use_lineage && in_checkpoint && io::restore_from_checkpoint(s, leaf)) {
          ++s.recovered().restored_from_checkpoint;
          by_checkpoint.push_back(label);
          done = true;
        }
      } catch (const JobReplaced&) {
        throw;  // lost again while recovering: the caller recovers once more
      } catch (const Error& e) {
        why = e.what();
      }
    }
    if (done) continue;
    left.push_back(leaf);
    if (why.empty()) still.push_back(label);
    else failed.push_back(cat_str(label, " (", why, ")"));
  }
  pending = std::move(left);
  // The new copies on each rank's buddy, as after any run that stores.
  std::vector<uint64_t> keys;
  for (const NodeRef& leaf : lost)
    if (!s.stored().lost(leaf->id) && s.stored().layout(leaf->id)) keys.push_back(leaf->id);
  if (Job* job = s.coordinator(); job && !keys.empty()) job->replicate(keys);

  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string msg = "tapestry: ";
  if (!by_lineage.empty()) msg += cat_str("recomputed ", join(by_lineage), " from lineage; ");
  if (!by_checkpoint.empty())
    msg += cat_str("read ", join(by_checkpoint), " from the checkpoint in '", ckpt_dir, "'; ");
  if (!still.empty()) msg += cat_str("LOST ", join(still), " (no copy, no lineage, no checkpoint); ");
  if (!failed.empty()) msg += cat_str("LOST ", join(failed), "; ");
  msg += cat_str("in ", static_cast<int>(took * 10) / 10.0, " s");
  s.notify(msg);
  if (trace::enabled())
    trace::record({"recover", "lineage and checkpoint", 0, trace::kPhases, trace::now_us() - took * 1e6,
                   took * 1e6,
                   cat_str("\"restored_from_lineage\":", by_lineage.size(), ",\"restored_from_checkpoint\":",
                           by_checkpoint.size(), ",\"lost\":", still.size() + failed.size())});
}

void replicate_recovering(Session& s, const std::vector<uint64_t>& keys) {
  for (int attempt = 0;; ++attempt) {
    Job* job = s.coordinator();
    if (!job) return;
    std::vector<uint64_t> todo;
    for (uint64_t k : keys)
      if (s.stored().layout(k) && !s.stored().lost(k) && !job->replicated(k)) todo.push_back(k);
    if (todo.empty()) return;
    try {
      return job->replicate(todo);
    } catch (const JobReplaced& r) {
      if (attempt >= kMaxReplacements) throw;
      recover_lost(s, r);  // then the keys the loss left without a copy on their buddy
    }
  }
}

void replicate_for_binding(Session& s, const NodeRef& value) {
  const Job* job = s.coordinator();
  if (!job || !job->replaceable() || !value || value->value || !s.stored().layout(value->id) ||
      job->replicated(value->id))
    return;
  replicate_recovering(s, {value->id});
}

}  // namespace tapestry
