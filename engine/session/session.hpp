// A session: everything one user's work keeps between observations, owned in one place.
//   Session s(Config::from_environment());     // the shell's, one per process (repl/main.cpp)
//   s.env().bind("w", expr);  observe_values(s, {y});   // engine/session/observe.hpp
//   Session t(Config{});  t.set_ranks(4);      // another, independent of s
// A session has its own named tensors, stored tensors and their shards, plan cache, counters,
// trace, cancel flag, mesh, device and random seed. Sessions share only the process: nodes are
// interned process-wide (engine/ir/node.hpp) and so is the kernels' thread pool. One session
// works at a time: its telemetry is current while it observes (engine/telemetry/telemetry.hpp).
// Under MPI each process has one: rank 0's coordinates the job, a worker's serves it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/comm/mpi.hpp"
#include "engine/device/plugin.hpp"
#include "engine/dist/coordinator.hpp"
#include "engine/dist/job.hpp"
#include "engine/ir/node.hpp"
#include "engine/plan/planner.hpp"
#include "engine/session/checkpoint.hpp"
#include "engine/session/computed_layouts.hpp"
#include "engine/session/config.hpp"
#include "engine/session/machine_rates.hpp"
#include "engine/session/spill.hpp"
#include "engine/store/environment.hpp"
#include "engine/store/shard_store.hpp"
#include "engine/store/stored_tensor.hpp"
#include "engine/telemetry/telemetry.hpp"

namespace tapestry {

class Session {
 public:
  // Sets the kernels' threads when the config names a number (the pool is the process's).
  explicit Session(Config config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Config& config() const { return config_; }
  Environment& env() { return env_; }
  ShardStore& shard_store() { return shard_store_; }
  StoredCatalog& stored() { return stored_; }
  plan::PlannerState& planner() { return planner_; }
  Telemetry& telemetry() { return telemetry_; }
  ComputedLayouts& layouts() { return layouts_; }
  // The seed of the next unseeded random tensor (tp.seed); each one advances it.
  uint64_t& random_seed() { return seed_; }

  // The mesh observations run on: config().ranks virtual ranks (loopback), or the MPI job's
  // ranks; with the device's rates, and the memory limit as each rank's capacity (so the
  // search prefers plans that fit; engine/plan/memory_limit.hpp refuses plans beyond it).
  const plan::Mesh& mesh();
  void set_ranks(int ranks);  // user_check: 1..4096
  // The compute, memory and link rates that mesh is costed with: this machine's, from the
  // cache (measured on first use, well under a second), or nullopt with TAPESTRY_RATES=builtin
  // (the documented defaults). Modelled meshes (tp.plan's {mesh = ...}) never use them.
  const std::optional<MachineRates>& rates();
  // Measures again and rewrites the cache (`tapestry --calibrate`); `link`, when given, is a
  // ping-pong's measurement (calibrate.hpp), else an earlier measured link is kept.
  const MachineRates& recalibrate(const std::optional<plan::Link>& link = std::nullopt);
  // The per-rank memory budget: --memory-per-rank (or TAPESTRY_MEMORY_PER_RANK), else the memory
  // available when the session started less a margin, split over the machine's ranks
  // (engine/session/memory_budget.hpp). It is the planner's capacity, the limit a plan is checked
  // against, and, times the ranks this process holds, every tensor allocation's budget
  // (engine/ir/value.hpp).
  void set_memory_per_rank(int64_t bytes);  // 0: the default
  int64_t memory_per_rank() const;

  // The device, selected on first use: the GPU probe loads the driver, which a plain start
  // avoids. device() is its backend, or nullptr when the session computes on the CPU.
  const device::Selection& device_selection();
  DeviceBackend* device();
  // The device copies of host values kept between observations: nullptr without a device, or
  // before device() first selected it (asking selects nothing).
  DeviceCopies* device_copies();
  // The device can join device peers and TAPESTRY_DEVICE_PEERS=0 does not turn them off.
  bool device_peers_wanted();

  // Rank 0 of an MPI job: coordinates it (the mesh becomes the job's ranks); the job shuts
  // down with the session, or at exit.
  void start_coordinator(comm::Mpi& mpi);
  // A driver: launches an MPI job of `ranks` ranks and runs every observation on it
  // (engine/dist/remote_job.hpp); `args` go on each rank's command line.
  void start_remote_job(int ranks, std::vector<std::string> args);
  void set_spill_dir(std::string dir) { config_.spill_dir = std::move(dir); }  // --spill-dir
  void set_shrink(bool on) { config_.shrink = on; }                            // --shrink
  // --checkpoint-dir and --checkpoint-every (minutes; 0: only tp.checkpoint()).
  void set_checkpoints(std::string dir, double every_min);
  Job* coordinator() { return coordinator_.get(); }  // nullptr outside an MPI job
  int mpi_job_ranks() const { return coordinator_ ? coordinator_->ranks() : 0; }
  // Ranks 1..N-1: serves rank 0's commands until shutdown; the exit status.
  int serve(comm::Mpi& mpi);
  // Rank 0 of a driver's job (config().job set): serves the driver; the exit status.
  int serve_driver(comm::Mpi& mpi);
  // The names tp.env binds to the stored tensor `key` ("w1", "a, b"), or "".
  std::string names_of(uint64_t key) const;
  // After a driver's job was replaced by one with fewer ranks (--shrink): the mesh follows it.
  void sync_job_ranks();
  // Stored tensors recomputed or reloaded after a lost job (engine/session/recovery.hpp) and
  // the leaves still lost (weakly: each is tried again after a later loss).
  RecoveryStats& recovered() { return recovered_; }
  std::vector<std::weak_ptr<const Node>>& lost_leaves() { return lost_leaves_; }
  CheckpointRecord& last_checkpoint() { return checkpoint_; }  // engine/session/checkpoint.hpp
  // True while tp.env's bindings are computed: what they store gets buddy replicas (remote_job.hpp).
  void binding_names(bool on) { binding_names_ = on; }
  Spill& spill() { return spill_; }  // engine/session/spill.hpp
  // tp.place(x, {storage = "disk"}) (engine/session/placement.hpp): the placed tensors' files,
  // each removed once its node is gone (sweep_placements, at every observation) or at the end.
  struct Placement {
    std::weak_ptr<const Node> node;
    uint64_t id = 0;
    std::string path;
  };
  std::vector<Placement>& placements() { return placements_; }
  // The folder this process's working files go under: --spill-dir's (default /tmp) tapestry-PID.
  std::string work_dir() const;
  void sweep_placements();
  // A notice to the user (stderr): what a lost job took and what came back.
  void notify(const std::string& message);

  // plan::plan_observation through this session's plan cache, with its stored tensors read
  // where they lie.
  plan::PlannedGraph plan_observed(const std::vector<NodeRef>& roots, const plan::Mesh& mesh,
                                   plan::SearchOptions opts);

 private:
  plan::Mesh machine_mesh(int ranks);
  // Sets the process's allocation budget from memory_per_rank().
  void apply_memory_budget();

  Config config_;
  Telemetry telemetry_;
  std::optional<device::Device> device_;
  // Declared after the device: its pieces in device memory are freed before the device goes.
  ShardStore shard_store_;
  StoredCatalog stored_;
  Environment env_;
  plan::PlannerState planner_;
  ComputedLayouts layouts_;
  // After the store and the environment it spills from, so it goes (and gives up the
  // process's pressure handler) before them.
  Spill spill_{*this};
  bool binding_names_ = false;
  std::optional<plan::Mesh> mesh_;
  std::optional<MachineRates> rates_;
  bool rates_read_ = false;
  uint64_t seed_ = 0x5eed;
  int64_t available_at_start_ = 0;  // engine/session/memory_budget.hpp
  RecoveryStats recovered_;
  std::vector<std::weak_ptr<const Node>> lost_leaves_;
  CheckpointRecord checkpoint_;
  std::vector<Placement> placements_;
  // Last: the job shuts down (device peers first) before anything it runs on goes.
  std::unique_ptr<Job> coordinator_;
};

}  // namespace tapestry
