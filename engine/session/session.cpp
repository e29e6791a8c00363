#include "engine/session/session.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <utility>

#include "engine/dist/head.hpp"
#include "engine/dist/remote_job.hpp"
#include "engine/dist/salvage_watch.hpp"
#include "engine/dist/worker.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/session/calibrate.hpp"
#include "engine/session/memory_budget.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

Session::Session(Config config) : config_(std::move(config)), available_at_start_(available_memory()) {
  if (config_.threads > 0) cpu::set_num_threads(config_.threads);
  // Only narrowing does anything: the widest set this CPU runs is the default.
  if (config_.isa == "avx2") cpu::set_isa(cpu::Isa::Base);
  apply_memory_budget();
  set_retry_policy(config_.retry);
  planner_.dump = config_.debug_plan;
  if (config_.spill) spill_.install();
}

int64_t Session::memory_per_rank() const {
  if (config_.memory_per_rank > 0) return config_.memory_per_rank;
  // Virtual ranks share this machine's memory; MPI ranks share it with the others on the node.
  const int on_machine = config_.mpi_launched ? config_.local_ranks : config_.ranks;
  return default_memory_per_rank(available_at_start_, on_machine);
}

void Session::apply_memory_budget() {
  const int64_t in_process = config_.mpi_launched ? 1 : config_.ranks;
  const int64_t per = memory_per_rank();
  set_memory_budget(per > std::numeric_limits<int64_t>::max() / in_process ? 0 : per * in_process);
  // Values are tracked for spilling only under a given budget: the default one costs nothing.
  spill_.set_tracking(config_.spill && config_.memory_per_rank > 0);
}

Session::~Session() {
  for (const Placement& p : placements_) std::remove(p.path.c_str());
  // The stored pieces now, with the files of those that were spilled, so the working folders
  // can go once empty (another session of this process may still use them).
  for (const auto& [key, rank] : shard_store_.holdings()) shard_store_.drop(key);
  std::error_code ec;
  std::filesystem::remove(work_dir() + "/spill", ec);
  std::filesystem::remove(work_dir() + "/disk", ec);
  std::filesystem::remove(work_dir(), ec);
}

void Session::sweep_placements() {
  for (auto it = placements_.begin(); it != placements_.end();) {
    if (!it->node.expired()) {
      ++it;
      continue;
    }
    std::remove(it->path.c_str());
    env_.forget_on_disk(it->id);
    it = placements_.erase(it);
  }
}

std::string Session::work_dir() const {
  return cat_str(config_.spill_dir.empty() ? "/tmp" : config_.spill_dir, "/tapestry-", getpid());
}

const std::optional<MachineRates>& Session::rates() {
  if (rates_read_ || config_.builtin_rates) return rates_;
  rates_read_ = true;
  const std::string key = machine_key(cpu::num_threads());
  rates_ = load_rates(rates_cache_file(config_.cache_dir), key);
  if (!rates_) {
    rates_ = calibrate(key);
    // Another process may measure at the same time: the last rename wins, both are this machine's.
    // An unwritable cache only costs measuring again next time.
    try {
      save_rates(rates_cache_file(config_.cache_dir), *rates_);
    } catch (const Error&) {
    }
  }
  return rates_;
}

const MachineRates& Session::recalibrate(const std::optional<plan::Link>& link) {
  const std::string file = rates_cache_file(config_.cache_dir), key = machine_key(cpu::num_threads());
  const std::optional<MachineRates> old = load_rates(file, key);
  MachineRates r = calibrate(key);
  if (link) r.link = *link, r.link_measured = true;
  else if (old && old->link_measured) r.link = old->link, r.link_measured = true;
  save_rates(file, r);
  rates_ = r;
  rates_read_ = true;
  mesh_.reset();
  return *rates_;
}

plan::Mesh Session::machine_mesh(int ranks) {
  plan::Mesh here = plan::Mesh::this_machine(ranks);
  if (const std::optional<MachineRates>& r = rates()) here = with_rates(here, *r);
  plan::Mesh m = device::apply_device(here, device_selection());
  // On the CPU the budget is the capacity; a device keeps its own memory's, unless one is given.
  if (config_.memory_per_rank > 0 || !device()) m.mem_bytes_per_rank = static_cast<double>(memory_per_rank());
  // Under a given budget stored pieces spill (spill.hpp): a plan needs only what it holds at
  // once, and runs in bands when even that is too much (plan/bands.hpp).
  m.spill = config_.spill && config_.memory_per_rank > 0;
  return m;
}

const plan::Mesh& Session::mesh() {
  if (!mesh_) mesh_ = machine_mesh(config_.ranks);
  return *mesh_;
}

void Session::set_ranks(int ranks) {
  user_check(ranks >= 1 && ranks <= 4096, "ranks must be in 1..4096, got ", ranks);
  config_.ranks = ranks;
  mesh_.reset();  // made again when next needed
  apply_memory_budget();
}

void Session::set_memory_per_rank(int64_t bytes) {
  user_check(bytes >= 0, "the memory per rank must be a number of bytes >= 0, got ", bytes);
  config_.memory_per_rank = bytes;
  mesh_.reset();
  apply_memory_budget();
}

const device::Selection& Session::device_selection() {
  if (!device_) device_ = device::open_device(config_.device, config_.local_rank);
  return device_->selection;
}

DeviceBackend* Session::device() {
  device_selection();
  return device_->backend.get();
}

DeviceCopies* Session::device_copies() { return device_ ? device_->copies.get() : nullptr; }

bool Session::device_peers_wanted() {
  const DeviceBackend* dev = device();
  return config_.device_peers && dev && dev->can_join_peers();
}

void Session::start_coordinator(comm::Mpi& mpi) {
  internal_check(!coordinator_);
  coordinator_ =
      std::make_unique<Coordinator>(mpi, Coordinator::Settings{device(), &shard_store_, device_peers_wanted(),
                                                               config_.mpi_timeout_s, !config_.job.empty()});
  if (mpi.size() > 1) set_ranks(mpi.size());
}

void Session::start_remote_job(int ranks, std::vector<std::string> args) {
  internal_check(!coordinator_ && ranks > 1);
  set_ranks(ranks);
  RemoteJob::Settings s;
  s.ranks = ranks;
  s.args = std::move(args);
  s.launch = config_.launch;
  s.work_dir = work_dir();
  s.catalog = &stored_;
  s.name_of = [this](uint64_t key) { return names_of(key); };
  s.replicas = config_.replicas;
  s.replicate_roots = [this] { return binding_names_; };
  s.shrink = config_.shrink;
  s.notify = [this](const std::string& m) { notify(m); };
  // Stored tensors and their replicas may take half of each rank's memory; past it a new
  // stored tensor has no replica (lineage and checkpoints are the other sources).
  s.replica_budget = memory_per_rank() / 2;
  coordinator_ = std::make_unique<RemoteJob>(std::move(s));
}

std::string Session::names_of(uint64_t key) const {
  std::string out;
  for (const auto& [name, e] : env_.entries())
    if (e.stored && e.stored->id == key) out += (out.empty() ? "" : ", ") + name;
  return out;
}

void Session::set_checkpoints(std::string dir, double every_min) {
  user_check(every_min >= 0, "--checkpoint-every needs minutes >= 0, got ", every_min);
  config_.checkpoint_dir = std::move(dir);
  config_.checkpoint_every_min = every_min;
}

void Session::sync_job_ranks() {
  if (coordinator_ && coordinator_->ranks() > 1 && coordinator_->ranks() != config_.ranks)
    set_ranks(coordinator_->ranks());
}

void Session::notify(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
}

int Session::serve(comm::Mpi& mpi) {
  const TelemetryScope in(telemetry_);  // a traced run captures into this session's trace
  WorkerSetup setup{shard_store_, device(), device_peers_wanted(), config_.fault, config_.io_fault_rank,
                    {},           0};
  if (const std::optional<JobAddress> a = parse_job_address(config_.job)) {
    setup.salvage_dir = a->salvage_dir;
    setup.driver_pid = a->driver_pid;
  }
  return worker_main(mpi, setup);
}

int Session::serve_driver(comm::Mpi& mpi) {
  const TelemetryScope in(telemetry_);
  const std::optional<JobAddress> a = parse_job_address(config_.job);
  user_check(a.has_value(), "TAPESTRY_JOB is not a job address: '", config_.job, "'");
  start_coordinator(mpi);
  const SalvageWatch salvage(shard_store_, a->salvage_dir, 0, a->driver_pid);
  const int status =
      head_main(*static_cast<Coordinator*>(coordinator_.get()), shard_store_, *a, config_.io_fault_rank);
  coordinator_->shutdown();
  return status;
}

plan::PlannedGraph Session::plan_observed(const std::vector<NodeRef>& roots, const plan::Mesh& mesh,
                                          plan::SearchOptions opts) {
  const int ranks = mesh.ranks;
  return plan::plan_observation(planner_, roots, mesh, std::move(opts), true,
                                [this, ranks](uint64_t id) -> const std::vector<plan::Shard>* {
                                  const StoredLayout* s = stored_.usable(id, ranks);
                                  return s ? &s->shards : nullptr;
                                });
}

}  // namespace tapestry
