// What a driver's session does once its MPI job was lost and replaced (engine/dist/job.hpp's
// JobReplaced): the stored tensors of which no copy survived come back from the cheapest source
// they have, and the request that was running is planned and run again.
//   with_recovery(s, [&] { run_observation(...); });   // runs f again after a replaced job
//   recover_lost(s, replaced);                        // what with_recovery does in between
// Sources, cheapest first (the job restores survivors' pieces and buddy replicas itself):
// - lineage (engine/store/lineage.hpp): the expression the tensor was computed from, over named
//   inputs that are still stored (or were brought back first: tensors come back in the order
//   they were made) and creators; costed by its plan's modelled time;
// - the last automatic checkpoint (engine/session/checkpoint.hpp), when it holds that version of
//   the tensor: costed at kCheckpointReadRate.
// What has neither stays lost: its readers fail with the reason, and the notice names it.
// tp.stats() counts restored_from_lineage and restored_from_checkpoint, and a traced run has a
// `recover` event saying which source each tensor came from.
#pragma once

#include <optional>
#include <vector>

#include "engine/dist/job.hpp"

namespace tapestry {

class Session;

// The rate a checkpoint is assumed to be read at (bytes/s), against a recomputation's modelled
// time, when a lost tensor has both.
inline constexpr double kCheckpointReadRate = 1e9;
// Replaced jobs in a row one request goes through before its error is the user's.
inline constexpr int kMaxReplacements = 5;

// Brings back what the replaced job lost (every leaf still marked lost, not only r.lost) and
// makes the session's mesh the new job's. Prints what came back from where.
void recover_lost(Session& s, const JobReplaced& r);

// Runs f; after a replaced job, recovers (above) and runs it again, planning anew.
template <class F> decltype(auto) with_recovery(Session& s, F&& f) {
  for (int attempt = 0;;) {
    std::optional<JobReplaced> replaced;
    try {
      return f();
    } catch (const JobReplaced& r) {
      if (++attempt > kMaxReplacements) throw;
      replaced.emplace(r);
    }
    while (replaced) {  // a loss while recovering is recovered from in turn
      const JobReplaced r = std::move(*replaced);
      replaced.reset();
      try {
        recover_lost(s, r);
      } catch (const JobReplaced& again) {
        if (++attempt > kMaxReplacements) throw;
        replaced.emplace(again);
      }
    }
  }
}

// Job::replicate of the keys still stored and not yet replicated; a loss during it brings back
// what was lost (nothing to run again) and the rest are replicated on the new job.
void replicate_recovering(Session& s, const std::vector<uint64_t>& keys);

// Before tp.env binds `value`: when it is a stored tensor computed without a replica (a
// tp.eval'd value), its pieces get buddy replicas first, while the previous binding still
// keeps its lineage's inputs alive (docs/reliability.md, "Detached values").
void replicate_for_binding(Session& s, const NodeRef& value);

}  // namespace tapestry
