// Rank 0's side of the MPI engine: runs a plan on every rank of the job.
//   Coordinator job(*comm::Mpi::start(true), {dev, store, peers, timeout});   // rank 0, once
//   if (job.ranks() == g.num_ranks) report = job.run_plan(g);   // roots get their values
// run_plan sends the plan to every worker, runs rank 0's part over MpiTransport, gathers the
// roots' shards to rank 0 and waits for every worker's status. Any failure (a block on some
// rank, a bad message, Ctrl-C) aborts the run on every rank, leaves every root as it was, and
// throws the first real error as "rank r: ...". A worker that stays silent for
// TAPESTRY_MPI_TIMEOUT seconds (default 300) is reported; one that then ignores the abort
// marks the job broken: later runs are refused and the job is aborted at exit, never awaited.
// A worker process that dies is noticed within a fraction of a second, one stopped (SIGSTOP)
// within seconds (engine/dist/liveness.hpp), and reported the same way: the job is broken, and
// rank 0 kills its other workers on this host. Each worker watches rank 0 in turn (a Driver
// command) and exits when it is gone. Run the job with
// `--mca orte_abort_on_non_zero_status 0` (tapestry -n sets it) so mpirun leaves rank 0
// alive to say so; rank 0 then aborts the job itself.
// The session of rank 0 owns its coordinator; the job is shut down when it goes, or at exit.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/comm/mpi.hpp"
#include "engine/device/peers.hpp"
#include "engine/dist/job.hpp"
#include "engine/dist/liveness.hpp"
#include "engine/dist/plan_wire.hpp"
#include "engine/dist/worker.hpp"
#include "engine/plan/sharded_graph.hpp"
#include "engine/shard/rank_program.hpp"
#include "engine/store/shard_store.hpp"

namespace tapestry {

class Coordinator final : public Job {
 public:
  struct Settings {
    DeviceBackend* dev = nullptr;  // rank 0's device, or nullptr: the CPU
    ShardStore* store = nullptr;   // rank 0's stored shards
    bool device_peers = false;     // rank 0's device offers to join device peers
    double timeout_s = 300;        // TAPESTRY_MPI_TIMEOUT
    // The head of a job a driver launched (engine/dist/head.hpp): a lost worker leaves the
    // others running until salvage() has them write their pieces.
    bool salvage_on_loss = false;
  };

  // Rank 0 of the job: waits briefly for every worker's hello, then has every rank join the
  // device peers when all can. Shuts the workers down at exit if it still runs then.
  Coordinator(comm::Mpi& mpi, Settings settings);
  ~Coordinator() override;  // shutdown()
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // The ranks of the job; 0 once it is shut down.
  int ranks() const override;

  // How slices cross between the ranks' devices: the device peers' name ("nccl", ...), or
  // "none: <why>" (through the host over MPI).
  const std::string& device_transport() const override { return device_transport_; }

  // Why the job cannot be trusted any more (a worker died or stopped answering), or "".
  const std::string& broken() const override { return broken_; }

  // Runs `g` (planned for ranks() ranks) on the job. Throws as described above.
  // `keys`: initial shards read from each rank's shard store, results kept there.
  RunReport run_plan(const plan::ShardedGraph& g, const StoreKeys& keys = {}) override;
  // The same, each rank lowering its own part from the plan's choices (plan::lower_choice):
  // the workers get only `plan`, and rank 0 runs `mine`, its own part (plan::rank_part).
  // blocks: the plan's blocks over all ranks (Plan::blocks), for the progress bar.
  RunReport run_own_parts(const PlanChoices& plan, const plan::ShardedGraph& mine, const StoreKeys& keys,
                          int64_t blocks) override;

  // Runs an I/O job (engine/io/parallel_io.hpp: encode_io's bytes) on every rank: sends it as
  // an Io command, runs `mine` (rank 0's part), and waits for every worker's status. Throws the
  // first failure ("rank r: ...") once every rank answered; a dead or silent worker as run_plan.
  void run_io(std::vector<char> job, const std::function<void()>& mine) override;

  // Frees stored shards on every worker (rank 0 drops its own itself).
  void drop_on_workers(const std::vector<uint64_t>& keys) override;

  // Every rank's pieces of `keys` copied to its buddy (engine/dist/replica.hpp); a dead or
  // silent worker as run_plan.
  void replicate(const std::vector<uint64_t>& keys) override;
  bool replicated(uint64_t key) const override { return replicated_.count(key) != 0; }
  // Loads the pieces a lost job salvaged (encode_restore's job) on every rank.
  void restore(std::vector<char> job);

  // After a loss (broken() set): every rank still running writes its pieces to `dir` (rank 0
  // its own too), waited for up to 10 s; then the other workers on this host are killed.
  void salvage(const std::string& dir);
  // A worker found lost now (dead or stopped past the grace), marking the job broken; 0 if none.
  int watch();
  // "rank 2 (pid 4242 on node7) died" for each rank lost so far, joined by "; ".
  std::string lost_ranks() const;

  // Tells every worker to exit, then finalizes MPI (aborts the job when it is broken).
  // Idempotent.
  void shutdown() override;
  // The workers' spills, from their latest statuses (rank 0's own are its session's).
  SpillCounts spills() const override;

 private:
  class Statuses;
  // run_plan and run_own_parts: `plan` is the workers' message, `g` rank 0's graph.
  RunReport run(std::vector<char> plan, uint8_t plan_flags, const plan::ShardedGraph& g,
                const StoreKeys& keys, int64_t total_blocks);
  void connect_device_peers();
  // Sends `c` (its epoch set here) to every worker, runs `mine(epoch)`, waits for every status.
  void run_everywhere(Command c, const std::function<void(uint64_t)>& mine, const char* what);
  void abort_run(uint64_t epoch, Statuses& st);
  void check_alive();  // throws, marking the job broken, when a worker was lost
  void mark_broken(std::string why);

  comm::Mpi* mpi_;
  Settings settings_;
  uint64_t epoch_ = 0;
  std::string broken_;  // set when a worker stopped answering: the job cannot be trusted
  std::set<uint64_t> replicated_;
  std::set<int> lost_;     // ranks found lost
  std::string lost_text_;  // lost_ranks()
  bool shut_ = false;
  Peers peers_;
  std::vector<SpillCounts> worker_spills_;  // per rank, as its latest status said
  // Device peers every rank joined at start (engine/device/peers.hpp); retired after a failed
  // run, whose device transfers may be half-matched.
  std::unique_ptr<comm::DevicePeers> device_peers_;
  bool device_peers_retired_ = false;
  std::string device_transport_ = "none: slices cross through the host over MPI";
};

}  // namespace tapestry
