#include "engine/dist/coordinator.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "engine/dist/plan_wire.hpp"
#include "engine/dist/replica.hpp"
#include "engine/dist/salvage_watch.hpp"
#include "engine/dist/worker.hpp"
#include "engine/ir/error.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/store/shard_file.hpp"
#include "engine/telemetry/cancel.hpp"
#include "engine/telemetry/trace.hpp"

namespace tapestry {

namespace {

using Clock = std::chrono::steady_clock;

// The coordinator of this process's job, shut down at exit if its session has not ended.
Coordinator* g_running = nullptr;

void shutdown_at_exit() {
  if (g_running) g_running->shutdown();
}

// Worker w's status; a malformed one reads as w's internal failure.
Status received_status(std::span<const char> bytes, int w, uint64_t epoch) {
  try {
    return decode_status(bytes);
  } catch (const Error& e) {
    return Status::failed(Status::Internal, epoch, cat_str("rank ", w, ": ", e.what()));
  }
}

}  // namespace

// The statuses of one run, one per worker, as they arrive.
class Coordinator::Statuses {
 public:
  // origin_us: when rank 0 sent the run; a worker's trace events are relative to its start.
  Statuses(comm::Mpi& mpi, Peers& peers, std::vector<SpillCounts>& spills, uint64_t epoch, double origin_us)
      : mpi_(mpi), peers_(peers), spills_(spills), epoch_(epoch), origin_us_(origin_us), got_(mpi.size()) {}

  // Takes every status that has arrived; whether any did.
  bool collect() {
    bool any = false;
    for (int w = 1; w < mpi_.size(); ++w) {
      while (!got_[w]) {
        auto bytes = mpi_.poll(w, comm::kTagStatus);
        if (!bytes) break;
        Status s = received_status(*bytes, w, epoch_);
        // Counts in all, so a late or aborted run's status is as good as any.
        if (s.spills >= spills_[w].spills) spills_[w] = {s.spills, s.spill_bytes, s.spill_readbacks};
        if (s.kind == Status::Hello) {  // a late hello: not about this run
          peers_.hello(w, s.message);
          continue;
        }
        if (s.epoch != 0 && s.epoch < epoch_) continue;  // an aborted run's late answer
        record_trace(w, s);
        if (s.kind == Status::Failed) failed_.push_back(w);
        got_[w] = std::move(s);
        any = true;
      }
    }
    return any;
  }

  bool all() const {
    for (size_t w = 1; w < got_.size(); ++w)
      if (!got_[w]) return false;
    return true;
  }
  std::string missing() const {
    std::string s;
    for (size_t w = 1; w < got_.size(); ++w)
      if (!got_[w]) s += cat_str(s.empty() ? "" : ", ", w);
    return s;
  }
  bool any_failed() const { return !failed_.empty(); }
  const Status& first_failure() const { return *got_[failed_.front()]; }
  const std::optional<Status>& of(int w) const { return got_[w]; }

 private:
  // A worker's events go into rank 0's trace under its own pid.
  void record_trace(int w, const Status& s) const {
    if (s.trace.empty() || !trace::enabled()) return;
    std::vector<trace::Event> events;
    try {
      events = trace::decode_events(s.trace, origin_us_);
    } catch (const Error&) {
      return;  // a trace is not worth a failed run
    }
    for (trace::Event& e : events) {
      e.pid = w;
      trace::record(std::move(e));
    }
  }

  comm::Mpi& mpi_;
  Peers& peers_;
  std::vector<SpillCounts>& spills_;
  uint64_t epoch_;
  double origin_us_;
  std::vector<std::optional<Status>> got_;
  std::vector<int> failed_;  // in order of arrival: the first is the likely cause
};

// After a failure: every worker still running gets an abort and answers it, within a
// grace period; one that does not is reported and marks the job broken. Workers that have
// answered get it too, unanswered: it tells every rank to retire its collectives'
// communicators (a collective of the failed run may be half-matched on them).
void Coordinator::abort_run(uint64_t epoch, Statuses& st) {
  comm::Mpi& mpi = *mpi_;
  auto abort = std::make_shared<const std::vector<char>>(encode_command(Command::of(Command::Abort, epoch)));
  for (int w = 1; w < mpi.size(); ++w) mpi.post(w, comm::kTagCommand, abort);
  const auto end = Clock::now() + std::chrono::duration<double>(std::min(settings_.timeout_s, 10.0));
  comm::Backoff wait;
  while (!st.all() && Clock::now() < end) {
    if (st.collect()) continue;
    if (watch()) return;
    mpi.drain(epoch);
    mpi.progress();
    wait.pause();
  }
  if (!st.all())
    mark_broken(cat_str("the MPI job is broken: rank(s) ", st.missing(),
                        " did not answer an abort; restart tapestry"));
}

void Coordinator::check_alive() {
  if (const int lost = watch()) throw Error(peers_.obituary(lost));
}

// A lost rank is a lost job (Open MPI 4.1 cannot shrink one): the other workers on this host
// are killed now, so a stopped or stuck one cannot keep mpirun waiting, and none of them
// keeps running without a driver.
void Coordinator::mark_broken(std::string why) {
  if (broken_.empty()) broken_ = std::move(why);
  if (!settings_.salvage_on_loss) peers_.kill_local();  // the head kills them after salvage()
}

int Coordinator::watch() {
  if (!mpi_ || shut_) return 0;
  const int lost = peers_.lost();
  if (lost) {
    if (lost_.insert(lost).second)
      lost_text_ += cat_str(lost_text_.empty() ? "" : "; ", peers_.describe(lost));
    mark_broken(cat_str("the MPI job is broken: ", peers_.obituary(lost)));
  }
  return lost;
}

std::string Coordinator::lost_ranks() const { return lost_text_; }

// Every rank joins the device peers at once (NCCL's set-up is collective): rank 0 makes the id,
// sends it in a Peers command and joins; each worker joins and answers with one status.
void Coordinator::connect_device_peers() {
  comm::Mpi& mpi = *mpi_;
  DeviceBackend& dev = *settings_.dev;
  std::string failed;
  try {
    const std::string id = dev.make_peer_id();
    Command c;
    c.kind = Command::Peers;
    c.plan.assign(id.begin(), id.end());
    auto cmd = std::make_shared<const std::vector<char>>(encode_command(c));
    for (int w = 1; w < mpi.size(); ++w) mpi.post(w, comm::kTagCommand, cmd);
    device_peers_ = dev.join_peers(id, 0, mpi.size());
    if (!device_peers_) failed = "rank 0: the device cannot join peers";
  } catch (const std::exception& e) {
    failed = cat_str("rank 0: ", e.what());
  }
  const auto end = Clock::now() + std::chrono::duration<double>(settings_.timeout_s);
  comm::Backoff wait;
  for (int w = 1; w < mpi.size(); ++w) {
    std::optional<Status> st;
    while (!st && Clock::now() < end) {
      if (auto bytes = mpi.poll(w, comm::kTagStatus)) {
        st = received_status(*bytes, w, 0);
      } else {
        mpi.progress();
        wait.pause();
      }
    }
    if (!st) failed = cat_str("rank ", w, " did not join the device peers in ", settings_.timeout_s, " s");
    else if (st->kind != Status::Done && failed.empty()) failed = st->message;
  }
  if (failed.empty()) {
    device_transport_ = device_peers_->name();
  } else {
    device_peers_retired_ = true;
    device_transport_ = "none: slices cross through the host over MPI (device peers failed: " + failed + ")";
  }
}

Coordinator::Coordinator(comm::Mpi& mpi, Settings settings)
    : mpi_(&mpi), settings_(settings), peers_(mpi.size()), worker_spills_(mpi.size()) {
  internal_check(mpi.rank() == 0 && settings_.store != nullptr && g_running == nullptr);
  // Every worker says who it is first; wait for them briefly (they start together).
  const auto end = Clock::now() + std::chrono::seconds(30);
  comm::Backoff wait;
  bool all_can_join = settings_.device_peers;  // and every worker's device, from its Hello
  for (int w = 1; w < mpi.size(); ++w) {
    bool heard = false;
    while (!heard && Clock::now() < end) {
      auto bytes = mpi.poll(w, comm::kTagStatus);
      const Status st = bytes ? received_status(*bytes, w, 0) : Status{};
      if (st.kind == Status::Hello) {
        peers_.hello(w, st.message);
        heard = true;
        all_can_join = all_can_join && (st.caps & Status::CanJoinPeers);
        break;
      }
      mpi.progress();
      wait.pause();
    }
  }
  // Every worker watches this process, and exits when it is gone (a kill -9 of rank 0).
  const std::string me = this_process();
  auto driver = std::make_shared<const std::vector<char>>(
      encode_command(Command::of(Command::Driver, 0, std::vector<char>(me.begin(), me.end()))));
  for (int w = 1; w < mpi.size(); ++w) mpi.post(w, comm::kTagCommand, driver);
  g_running = this;
  static const bool registered = (std::atexit(shutdown_at_exit), true);
  (void)registered;
  if (mpi.size() > 1 && all_can_join) connect_device_peers();
}

Coordinator::~Coordinator() { shutdown(); }

int Coordinator::ranks() const { return mpi_ && !shut_ ? mpi_->size() : 0; }

void Coordinator::drop_on_workers(const std::vector<uint64_t>& keys) {
  for (uint64_t k : keys) replicated_.erase(k);
  if (!mpi_ || shut_ || !broken_.empty() || keys.empty()) return;
  Command c;
  c.kind = Command::Drop;
  c.drop = keys;
  auto cmd = std::make_shared<const std::vector<char>>(encode_command(c));
  for (int w = 1; w < mpi_->size(); ++w) mpi_->post(w, comm::kTagCommand, cmd);
}

RunReport Coordinator::run_plan(const plan::ShardedGraph& g, const StoreKeys& keys) {
  internal_check(g.part_of < 0);
  return run(encode_plan(g), 0, g, keys, static_cast<int64_t>(g.blocks.size()));
}

RunReport Coordinator::run_own_parts(const PlanChoices& plan, const plan::ShardedGraph& mine,
                                     const StoreKeys& keys, int64_t blocks) {
  internal_check(mine.part_of == 0);
  return run(encode_choices(plan), Command::Choices, mine, keys, blocks);
}

RunReport Coordinator::run(std::vector<char> plan, uint8_t plan_flags, const plan::ShardedGraph& g,
                           const StoreKeys& keys, int64_t total_blocks) {
  internal_check(mpi_ && !shut_ && g.num_ranks == mpi_->size());
  if (!broken_.empty()) throw Error(broken_);
  if (watch()) throw Error(broken_);
  // Between plans a value lives whole on rank 0 or, stored, in the ranks' shard stores.
  for (size_t i = 0; i < g.initial.size(); ++i)
    if (g.initial[i].rank != 0 && (keys.initial.empty() || keys.initial[i] == 0))
      throw InternalError(cat_str("the plan holds %", g.initial[i].tensor, " on rank ", g.initial[i].rank,
                                  " initially, but it is not stored there"));
  comm::Mpi& mpi = *mpi_;
  const uint64_t epoch = ++epoch_;
  const bool over_peers = device_peers_ && !device_peers_retired_;
  const uint8_t flags =
      (trace::enabled() ? Command::Trace : 0) | (over_peers ? Command::DevicePeers : 0) | plan_flags;
  Command run;
  run.epoch = epoch;
  run.plan = std::move(plan);
  run.flags = flags;
  run.store = keys;
  auto cmd = std::make_shared<const std::vector<char>>(encode_command(run));
  const double origin = trace::now_us();
  for (int w = 1; w < mpi.size(); ++w) mpi.post(w, comm::kTagCommand, cmd);

  Statuses st(mpi, peers_, worker_spills_, epoch, origin);
  comm::MpiTransport t(mpi, epoch);
  // Joining the plan's collective groups waits for their members: a dead one is reported.
  const double limit = settings_.timeout_s;
  t.set_join_check([this, limit, since = Clock::now()] {
    check_alive();
    if (std::chrono::duration<double>(Clock::now() - since).count() > limit) {
      mark_broken(cat_str("the MPI job is broken: a rank did not join a collective group in ", limit,
                          " s (TAPESTRY_MPI_TIMEOUT); restart tapestry"));
      throw Error(broken_);
    }
  });
  std::map<uint64_t, std::shared_ptr<Value>> values;
  std::exception_ptr mine;
  int64_t my_blocks = 0, my_peer_messages = 0, my_peer_bytes = 0;
  int64_t my_transfer_bytes = 0, my_combine_bytes = 0, my_gathered_bytes = 0;
  RunReport mine_on_device;  // rank 0's device blocks and host/device copies
  double my_move_s = 0;
  // Rank 0 sees only its own blocks until the statuses come: its share stands for the rest.
  int64_t mine_total = 0;
  for (const plan::Block& b : g.blocks) mine_total += b.rank == 0;
  Progress bar(total_blocks);
  try {
    RankProgram me(g, t, keys, settings_.dev, settings_.store);
    if (over_peers) me.use_device_peers(device_peers_.get());
    me.report_progress(&bar, mine_total ? double(total_blocks) / double(mine_total) : 0.0);
    bool sent = false, gathered = false;
    comm::Backoff wait(std::chrono::microseconds(1000),
                       std::chrono::milliseconds(5));  // a halo is usually near
    auto quiet_since = Clock::now();
    for (;;) {
      bool moved = !me.done() && me.advance();
      if (me.done() && !sent) sent = moved = true, me.send_outputs();
      if (sent && !gathered && me.gather_outputs(values)) gathered = moved = true;
      moved = st.collect() || moved;
      if (st.any_failed() || (gathered && st.all())) break;
      if (moved) {
        wait.reset();
        quiet_since = Clock::now();
        continue;
      }
      if (cancel_requested()) throw Cancelled();
      check_alive();
      if (std::chrono::duration<double>(Clock::now() - quiet_since).count() > limit)
        throw Error(cat_str("rank 0: no progress for ", limit, " s (TAPESTRY_MPI_TIMEOUT) while ",
                            me.done() ? "waiting for rank(s) " + st.missing() : "at " + me.waiting_on()));
      mpi.progress();
      if (me.collectives_in_flight()) wait.reset();  // yield, do not sleep: see rank_program.hpp
      wait.pause();
    }
    my_blocks = me.blocks_run();
    my_peer_messages = me.peer_messages();
    my_peer_bytes = me.peer_bytes();
    my_transfer_bytes = me.transfer_bytes();
    my_combine_bytes = me.combine_bytes();
    my_gathered_bytes = me.gathered_bytes();
    mine_on_device.device_blocks = me.device_blocks_run();
    mine_on_device.bytes_to_device = me.bytes_to_device();
    mine_on_device.bytes_from_device = me.bytes_from_device();
    my_move_s = me.move_seconds();
    if (!st.any_failed()) me.keep_outputs();
  } catch (const std::exception&) {  // no Lua runs here; rethrown below after the abort
    mine = std::current_exception();
  }
  if (mine || st.any_failed()) {
    if (broken_.empty()) abort_run(epoch, st);
    mpi.groups().retire_all();  // as every worker does on the abort
    if (over_peers) {           // its device transfers may be half-matched: later runs go through the host
      device_peers_retired_ = true;
      device_transport_ =
          "none: slices cross through the host over MPI (device peers retired after a failed run)";
    }
    // Workers that finished kept their shards of the new results: free them again.
    std::vector<uint64_t> kept;
    for (uint64_t k : keys.roots)
      if (k) kept.push_back(k);
    drop_on_workers(kept);
    if (mine) std::rethrow_exception(mine);
    throw_failure(st.first_failure());
  }
  mpi.progress();
  // Publish only now: any failure above left every root as it was.
  RunReport report{my_blocks,
                   t.messages_sent() + my_peer_messages,
                   t.bytes_sent() + my_peer_bytes,
                   my_move_s,
                   mine_on_device.device_blocks,
                   mine_on_device.bytes_to_device,
                   mine_on_device.bytes_from_device};
  report.transfer_bytes = my_transfer_bytes;
  report.combine_bytes = my_combine_bytes;
  report.gathered_bytes = my_gathered_bytes;
  for (int w = 1; w < mpi.size(); ++w) {
    const Status& w_st = *st.of(w);
    report.blocks += w_st.blocks;
    report.messages += w_st.messages;
    report.bytes += w_st.bytes;
    report.transfer_bytes += w_st.transfer_bytes;
    report.combine_bytes += w_st.combine_bytes;
    report.gathered_bytes += w_st.gathered_bytes;
  }
  for (auto& [id, v] : values) {
    const Node* n = g.find(id);
    if (n && !n->value) set_value(*n, std::move(v));
  }
  return report;
}

void Coordinator::run_io(std::vector<char> job, const std::function<void()>& mine) {
  Command io;
  io.kind = Command::Io;
  io.plan = std::move(job);
  run_everywhere(
      std::move(io), [&](uint64_t) { mine(); }, "an I/O job");
}

void Coordinator::replicate(const std::vector<uint64_t>& keys) {
  // Only a driver's job outlives a lost rank: elsewhere the job dies whole, copies and all.
  if (keys.empty() || !mpi_ || mpi_->size() < 2 || !settings_.salvage_on_loss) return;
  Command c;
  c.kind = Command::Replicate;
  c.drop = keys;
  run_everywhere(
      std::move(c),
      [&](uint64_t epoch) {
        replicate_part(*mpi_, *settings_.store, keys, epoch, [this] {
          check_alive();
          return false;
        });
      },
      "a replication");
  replicated_.insert(keys.begin(), keys.end());
}

void Coordinator::restore(std::vector<char> job) {
  const RestoreJob decoded = decode_restore(job);
  Command c;
  c.kind = Command::Restore;
  c.plan = std::move(job);
  run_everywhere(
      std::move(c), [&](uint64_t) { restore_part(*settings_.store, decoded, 0); }, "a restore");
}

void Coordinator::run_everywhere(Command c, const std::function<void(uint64_t)>& mine, const char* what) {
  internal_check(mpi_ != nullptr && !shut_);
  if (!broken_.empty()) throw Error(broken_);
  comm::Mpi& mpi = *mpi_;
  const uint64_t epoch = ++epoch_;
  c.epoch = epoch;
  auto cmd = std::make_shared<const std::vector<char>>(encode_command(c));
  for (int w = 1; w < mpi.size(); ++w) mpi.post(w, comm::kTagCommand, cmd);
  // Rank 0's own part first: the workers do theirs meanwhile.
  std::optional<Status> my_failure;
  try {
    mine(epoch);
  } catch (const std::exception&) {
    my_failure = failure_status(0, epoch);
  }
  if (!broken_.empty()) throw Error(broken_);
  Statuses st(mpi, peers_, worker_spills_, epoch, trace::now_us());
  comm::Backoff wait;
  auto quiet_since = Clock::now();
  const double limit = settings_.timeout_s;
  while (!st.all()) {
    if (st.collect()) {
      wait.reset();
      quiet_since = Clock::now();
      continue;
    }
    check_alive();
    if (std::chrono::duration<double>(Clock::now() - quiet_since).count() > limit) {
      mark_broken(cat_str("the MPI job is broken: rank(s) ", st.missing(), " did not finish ", what, " in ",
                          limit, " s (TAPESTRY_MPI_TIMEOUT); restart tapestry"));
      throw Error(broken_);
    }
    mpi.progress();
    wait.pause();
  }
  mpi.progress();
  if (my_failure) throw_failure(*my_failure);
  if (st.any_failed()) throw_failure(st.first_failure());
}

// The job is lost: every rank still running (rank 0 included) writes what it holds, so the job
// that replaces this one loses nothing that had a copy. The request goes through a file each
// rank's salvage thread watches (engine/dist/salvage_watch.hpp), not MPI: a survivor may be
// stuck in an MPI call on the dead rank. Waits only for the ranks that can answer, 10 s at most.
void Coordinator::salvage(const std::string& dir) {
  if (!mpi_ || shut_) return;
  comm::Mpi& mpi = *mpi_;
  // Every rank found dead or stopped now is named, not only the first one seen.
  for (int w = 1; w < mpi.size(); ++w)
    if (peers_.down(w) && lost_.insert(w).second)
      lost_text_ += cat_str(lost_text_.empty() ? "" : "; ", peers_.describe(w));
  request_salvage(dir);
  std::vector<int> live = {0};
  for (int w = 1; w < mpi.size(); ++w)
    if (!peers_.down(w)) live.push_back(w);
  const std::vector<int> missing = wait_salvaged(dir, live, 10.0);
  for (int w : missing) fprintf(stderr, "tapestry: rank %d did not save its pieces within 10 s\n", w);
  peers_.kill_local();
}

Job::SpillCounts Coordinator::spills() const {
  SpillCounts all;
  for (const SpillCounts& w : worker_spills_) {
    all.spills += w.spills;
    all.bytes += w.bytes;
    all.readbacks += w.readbacks;
  }
  return all;
}

void Coordinator::shutdown() {
  if (!mpi_ || shut_) return;
  shut_ = true;
  if (g_running == this) g_running = nullptr;
  comm::Mpi& mpi = *mpi_;
  mpi_ = nullptr;
  device_peers_.reset();  // before MPI and the device runtime go
  if (broken_.empty()) {
    auto bye = std::make_shared<const std::vector<char>>(encode_command(Command::of(Command::Shutdown)));
    for (int w = 1; w < mpi.size(); ++w) mpi.post(w, comm::kTagCommand, bye);
    if (!mpi.flush(5.0)) mark_broken("a worker did not take the shutdown");
  }
  comm::Mpi::finish(!broken_.empty());
}

}  // namespace tapestry
