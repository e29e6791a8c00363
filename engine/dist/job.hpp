// The MPI job as the session sees it: rank 0 in this process (Coordinator) or a job that a
// driver process launched and talks to over a socket (RemoteJob, engine/dist/remote_job.hpp).
//   Job* job = session.coordinator();
//   if (job && job->ranks() == g.num_ranks) report = job->run_plan(g, keys);
// Both run a plan on every rank, run I/O jobs, free stored shards and replicate them; only a
// remote job survives the loss of one of its processes (it relaunches and restores).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/dist/plan_wire.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/sharded_graph.hpp"
#include "engine/shard/rank_program.hpp"

namespace tapestry {

// How often a driver's job was lost and replaced, and where each stored tensor it restored
// came from: all of its pieces from the surviving ranks' own memory, some from a buddy's
// replica of a lost rank's pieces; or none survived (lost). tp.stats() reports them.
struct RecoveryStats {
  uint64_t job_relaunches = 0;
  uint64_t restored_from_survivors = 0;
  uint64_t restored_from_replicas = 0;
  uint64_t tensors_lost = 0;
  // Counted by the session (engine/session/recovery.hpp): recomputed from their lineage, or
  // read from the last automatic checkpoint.
  uint64_t restored_from_lineage = 0;
  uint64_t restored_from_checkpoint = 0;
};

// A driver's job was lost and replaced, and the request that was running cannot simply be sent
// again: some stored tensors had no surviving copy (`lost`: their leaves, marked lost in the
// catalog), or the new job has fewer ranks (--shrink), so every plan must be made again. The
// session recomputes or reloads what it can (engine/session/recovery.hpp) and plans the request
// again; uncaught, the message names what was lost.
class JobReplaced : public Error {
 public:
  JobReplaced(const std::string& msg, std::string what_lost, std::vector<NodeRef> leaves, int new_ranks)
      : Error(msg), loss(std::move(what_lost)), lost(std::move(leaves)), ranks(new_ranks) {}
  std::string loss;           // "rank 2 (pid 4242 on node7) died"
  std::vector<NodeRef> lost;  // stored leaves with no surviving copy
  int ranks;                  // the new job's
};

class Job {
 public:
  virtual ~Job() = default;
  // The ranks of the job; 0 once it is shut down.
  virtual int ranks() const = 0;
  // How slices cross between the ranks' devices ("nccl", or "none: <why>").
  virtual const std::string& device_transport() const = 0;
  // Why the job cannot be trusted any more, or "".
  virtual const std::string& broken() const = 0;
  // A plan made for ranks() ranks, whole (`g`) or as its choices with rank 0's part.
  virtual RunReport run_plan(const plan::ShardedGraph& g, const StoreKeys& keys = {}) = 0;
  virtual RunReport run_own_parts(const PlanChoices& plan, const plan::ShardedGraph& mine,
                                  const StoreKeys& keys, int64_t blocks) = 0;
  // An I/O job (engine/io/parallel_io.hpp) on every rank; `mine` is rank 0's part when rank 0
  // is this process.
  virtual void run_io(std::vector<char> job, const std::function<void()>& mine) = 0;
  // Frees stored shards on the ranks that are not this process.
  virtual void drop_on_workers(const std::vector<uint64_t>& keys) = 0;
  // Each rank's pieces of `keys` copied to its buddy (engine/dist/replica.hpp).
  virtual void replicate(const std::vector<uint64_t>& keys) = 0;
  // Whether a copy of `key` outlives the loss of any one rank.
  virtual bool replicated(uint64_t key) const = 0;
  virtual void shutdown() = 0;
  virtual RecoveryStats recovery() const { return {}; }
  // A driver's job, which is replaced when lost (JobReplaced): worth keeping lineage for.
  virtual bool replaceable() const { return false; }
  // Block retries counted by rank 0 when it is another process (tp.stats().block_retries).
  virtual int64_t block_retries() const { return 0; }
  // Spills to disk by the job's processes other than this one (tp.stats().spills ...): under
  // MPI each rank spills its own pieces past --memory-per-rank. In all, since the job started
  // (a driver's: since the first job, relaunches included).
  struct SpillCounts {
    int64_t spills = 0, bytes = 0, readbacks = 0;  // pieces written out, their bytes, read back
  };
  virtual SpillCounts spills() const { return {}; }
};

}  // namespace tapestry
