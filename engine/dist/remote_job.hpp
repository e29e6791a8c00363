// A driver's MPI job: `tapestry -n N` (and rank 0 of `mpirun -n N tapestry`) keeps the Lua
// state and the session in a process of its own and runs the job as a child:
//   RemoteJob job({ranks, args, launch, work_dir, &catalog, name_of, ...});   // mpirun -n N tapestry
//   job.run_own_parts(choices, mine, keys, blocks);   // as a Coordinator: plans, I/O, drops
// The job's rank 0 (the head, engine/dist/head.hpp) connects back over TCP and runs each
// request with its Coordinator; the values of the driver's leaves go with a plan and the roots'
// values come back. Open MPI 4.1 cannot shrink a job (no ULFM), so the job is the unit of
// failure: when any of its processes is lost, the ranks still running write what they hold to
// a salvage folder, the job ends, and the driver launches a new one (on fewer ranks with
// shrink), loads every stored tensor back (each piece from its own rank's file, or from the
// buddy's replica of a lost rank's piece: engine/dist/replica.hpp), and sends the request that
// was running again. Requests publish nothing until they succeed, so running one again is
// safe. A stored tensor no copy of survived is marked lost in the catalog, named in the notice.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/comm/mpi.hpp"
#include "engine/dist/job.hpp"
#include "engine/dist/job_link.hpp"
#include "engine/store/stored_tensor.hpp"

namespace tapestry {

class RemoteJob final : public Job {
 public:
  struct Settings {
    int ranks = 2;
    std::vector<std::string> args;  // each rank's command line after the program (--memory-per-rank ...)
    comm::LaunchEnv launch;
    std::string work_dir;  // salvage folders go under it (--spill-dir)
    StoredCatalog* catalog = nullptr;
    // The names of a stored tensor (tp.env's), for notices: "w1" or "" when none.
    std::function<std::string(uint64_t key)> name_of;
    // Notices to the user ("tapestry: rank 2 ... died; relaunching ...").
    std::function<void(const std::string&)> notify;
    bool replicas = true;  // TAPESTRY_REPLICAS=0: no buddy replicas
    // Whether the roots a request stores now get replicas: a named tensor's (tp.env) do; a
    // tp.eval result or a solver's loop state do not (a copy of every step's state cost W4 on
    // 2 ranks 20x its time). Unset: every stored root.
    std::function<bool()> replicate_roots;
    int64_t replica_budget = 0;  // bytes per rank stored tensors and their replicas may take
    int max_relaunches = 5;      // in a row, for one request
    // --shrink: after a loss the new job has one rank fewer per rank lost (never under 2), and
    // each stored tensor's pieces are mapped onto its ranks (Recovered::ranks).
    bool shrink = false;
  };

  // Launches the job and waits for its head (throws Error when it cannot).
  explicit RemoteJob(Settings s);
  ~RemoteJob() override;  // shutdown()

  int ranks() const override { return shut_ ? 0 : settings_.ranks; }
  const std::string& device_transport() const override { return device_transport_; }
  const std::string& broken() const override { return broken_; }
  RunReport run_plan(const plan::ShardedGraph& g, const StoreKeys& keys = {}) override;
  RunReport run_own_parts(const PlanChoices& plan, const plan::ShardedGraph& mine, const StoreKeys& keys,
                          int64_t blocks) override;
  void run_io(std::vector<char> job, const std::function<void()>& mine) override;
  void drop_on_workers(const std::vector<uint64_t>& keys) override;
  void replicate(const std::vector<uint64_t>& keys) override;
  bool replicated(uint64_t key) const override { return replicated_.count(key) != 0; }
  void shutdown() override;
  RecoveryStats recovery() const override { return recovery_; }
  bool replaceable() const override { return true; }
  int64_t block_retries() const override { return head_block_retries_; }
  SpillCounts spills() const override { return job_spills_; }  // every job's ranks', relaunches too

  // Ends the job's processes as a loss would (the tests' and `:job kill`'s way to lose it).
  pid_t launcher_pid() const { return child_; }

 private:
  void launch();
  // The idle watcher: while no request runs, looks at the job every 0.2 s and tells the user
  // at once when a process of it is lost (the head's Lost frame, its socket closed, a rank
  // gone); the next request then relaunches and restores before it runs.
  void watch();
  // Sends a request and returns its Result body; on a lost job, recovers and sends it again.
  std::vector<char> request(JobLink::Kind kind, const std::vector<char>& body);
  // After a loss: waits for the old job to end, launches a new one and restores the catalog.
  // `salvaged`: the head said so (the job can be ended at once).
  struct Recovered {
    std::string lost_names;     // the stored tensors no copy of survived, named, or ""
    std::vector<NodeRef> lost;  // their leaves
    bool reshaped = false;      // the new job has fewer ranks
  };
  Recovered recover(const std::string& what, bool salvaged);
  void end_child(double grace_s);
  RunReport run_request(bool whole, const std::vector<char>& plan, const StoreKeys& keys, int64_t blocks,
                        const std::vector<NodeRef>& nodes, const std::vector<NodeRef>& roots);
  void check_result(ByteReader& r);
  void count_head(ByteReader& r);  // the head's file bytes (into tp.stats), block retries, the job's spills
  void count_done(ByteReader& r);
  std::vector<uint64_t> to_replicate(const StoreKeys& keys, const std::vector<int64_t>& bytes) const;

  Settings settings_;
  std::unique_ptr<JobListener> listener_;
  JobLink link_;
  pid_t child_ = -1;
  int head_pid_ = 0;
  std::string head_host_;
  std::string token_;
  int generation_ = 0;
  std::string salvage_dir_;  // this generation's
  std::string device_transport_ = "none: slices cross through the host over MPI";
  std::string broken_;
  bool shut_ = false;
  std::set<uint64_t> replicated_;
  std::map<uint64_t, int64_t> replica_bytes_;  // what each replicated key takes, both copies
  int64_t replicated_bytes_ = 0;
  RecoveryStats recovery_;
  int64_t head_block_retries_ = 0;
  SpillCounts job_spills_;
  // One user of the link at a time: a request (the Lua thread) or the idle watcher.
  std::mutex mu_;
  struct PendingLoss {
    std::string what;
    bool salvaged;
  };
  std::optional<PendingLoss> pending_loss_;  // seen by the watcher while idle (under mu_)
  std::atomic<bool> stop_watch_{false};
  std::thread watcher_;
};

}  // namespace tapestry
