#include "engine/dist/worker.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <utility>

#include <signal.h>
#include <unistd.h>

#include "engine/dist/liveness.hpp"
#include "engine/dist/plan_wire.hpp"
#include "engine/dist/replica.hpp"
#include "engine/dist/salvage_watch.hpp"
#include "engine/io/parallel_io.hpp"
#include "engine/ir/codec.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/shard/rank_program.hpp"
#include "engine/store/shard_file.hpp"
#include "engine/store/shard_store.hpp"
#include "engine/telemetry/trace.hpp"

namespace tapestry {

namespace {

constexpr uint32_t kCommandMagic = 0x4d435054;  // "TPCM"
constexpr uint32_t kStatusMagic = 0x54535054;   // "TPST"
// 2: a Run command carries flags (Trace); a status carries the run's trace events.
// 3: a Run command carries store keys; Drop commands; Hello statuses.
// 4: Io commands (parallel .npy reads and writes).
// 5: Peers commands, the DevicePeers run flag, a Hello's caps.
// 6: one codec for every message (engine/ir/codec.hpp): u64 counts in trace events, a versioned
//    I/O job.
// 7: Driver commands.
// 8: the Choices run flag: a plan as its choices, each rank lowering its own part.
// 9: a status carries the run's transfer, combine and gathered bytes.
// 10: Replicate, Salvage and Restore commands.
constexpr uint32_t kProtocolVersion = 11;

// TAPESTRY_FAULT=RANK:RUN[:oom] (`spec`): whether this rank is to fail its run number `run`,
// and how.
std::optional<std::string> injected_fault(const std::string& spec, int rank, int64_t run) {
  if (spec.empty()) return std::nullopt;
  long r = -1, n = -1;
  char kind[16] = "";
  if (std::sscanf(spec.c_str(), "%ld:%ld:%15s", &r, &n, kind) < 2 || r != rank || n != run)
    return std::nullopt;
  return std::string(kind);
}

class Worker {
 public:
  Worker(comm::Mpi& mpi, const WorkerSetup& setup) : mpi_(mpi), setup_(setup) {
    if (!setup_.salvage_dir.empty())
      salvage_ =
          std::make_unique<SalvageWatch>(setup_.store, setup_.salvage_dir, mpi.rank(), setup_.driver_pid);
  }

  int serve() {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    Status hello;
    hello.kind = Status::Hello;
    hello.message = cat_str(getpid(), " ", host);
    if (setup_.device_peers) hello.caps |= Status::CanJoinPeers;
    report(std::move(hello));
    // A script's loop sends the next run within milliseconds: stay awake for it.
    comm::Backoff idle(std::chrono::microseconds(2000), std::chrono::milliseconds(20));
    for (;;) {
      std::optional<Command> c = next_command();
      if (!c) {
        watch_driver();  // only when idle: a driver's last Shutdown is read before its death
        // Keep matching stray slices of aborted runs, so their senders' requests complete.
        mpi_.drain(epoch_);
        mpi_.progress();
        idle.pause();
        continue;
      }
      idle.reset();
      if (c->kind == Command::Shutdown) break;
      if (c->kind == Command::Abort) {
        // The run it names has ended here already, but failed elsewhere: a collective of it
        // may be half-matched, so no communicator it used is trusted again (mpi_collective.hpp).
        mpi_.groups().retire_all();
        continue;
      }
      if (c->kind == Command::Drop) {
        for (uint64_t k : c->drop) setup_.store.drop(k);
        continue;
      }
      if (c->kind == Command::Io) {
        io(*c);
        continue;
      }
      if (c->kind == Command::Peers) {
        join_peers(*c);
        continue;
      }
      if (c->kind == Command::Driver) {
        driver_.hello(std::string(c->plan.begin(), c->plan.end()));
        if (salvage_) salvage_->watch_rank0(std::string(c->plan.begin(), c->plan.end()));
        continue;
      }
      if (c->kind == Command::Replicate || c->kind == Command::Salvage || c->kind == Command::Restore) {
        keep_safe(*c);
        continue;
      }
      run(*c);
    }
    mpi_.flush(2.0);  // our last statuses and slices; never wait on a peer that left
    return 0;
  }

 private:
  std::optional<Command> next_command() {
    if (deferred_) return std::exchange(deferred_, std::nullopt);
    auto bytes = mpi_.poll(0, comm::kTagCommand);
    if (!bytes) return std::nullopt;
    try {
      return decode_command(*bytes);
    } catch (const Error& e) {
      // Answer anyway (epoch 0 means "whatever run you wait for"), so rank 0 does not wait.
      report(Status::failed(Status::Internal, 0, on_rank(mpi_.rank(), e.what())));
      return std::nullopt;
    }
  }

  // Without a driver nobody will ever send this rank a command: exit rather than run forever
  // (mpirun leaves the workers alone when tapestry -n started it, see engine/dist/coordinator.hpp).
  // No MPI_Finalize: it would wait for rank 0.
  // On a job a driver launched, the salvage thread saves this rank's pieces when rank 0 dies
  // while the driver lives (engine/dist/salvage_watch.hpp) and exits: wait for it.
  void watch_driver() {
    if (!driver_.gone()) return;
    if (salvage_ && setup_.driver_pid > 0 && kill(setup_.driver_pid, 0) == 0) {
      for (int i = 0; i < 600; ++i) usleep(50'000);  // it exits the process; 30 s at most
      _exit(1);
    }
    fprintf(stderr, "tapestry: rank %d: the driver (rank 0, pid %d) is gone; this worker exits\n",
            mpi_.rank(), driver_.pid());
    fflush(stderr);
    _exit(1);
  }

  // Replicate, Salvage, Restore: this rank's part; one status either way.
  void keep_safe(const Command& c) {
    epoch_ = c.epoch;
    Status st;
    st.epoch = c.epoch;
    try {
      if (c.kind == Command::Replicate)
        replicate_part(mpi_, setup_.store, c.drop, c.epoch, [this] { return aborted(); });
      else if (c.kind == Command::Salvage)
        salvage_store(setup_.store, std::string(c.plan.begin(), c.plan.end()), mpi_.rank());
      else restore_part(setup_.store, decode_restore(c.plan), mpi_.rank());
    } catch (const std::exception&) {
      st = failure_status(mpi_.rank(), c.epoch);
    }
    report(std::move(st));
  }

  // Whether rank 0 aborted the current run; any other command waits for the loop.
  bool aborted() {
    watch_driver();
    if (deferred_) return false;
    std::optional<Command> c = next_command();
    if (!c) return false;
    if (c->kind == Command::Abort && c->epoch == epoch_) return true;
    if (c->kind == Command::Abort) return false;  // an older run's
    deferred_ = std::move(c);
    return false;
  }

  void report(Status s) {
    s.spills = setup_.store.spills();
    s.spill_bytes = setup_.store.spill_bytes();
    s.spill_readbacks = setup_.store.readbacks();
    mpi_.post(0, comm::kTagStatus, std::make_shared<const std::vector<char>>(encode_status(s)));
  }

  // Between blocks: has rank 0 aborted this run (Ctrl-C there, or another rank failed)?
  // Asked at most every 2 ms, so tiny blocks do not spend their time probing.
  bool abort_seen() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_probe_ < std::chrono::milliseconds(2)) return false;
    last_probe_ = now;
    return stopped_ = stopped_ || aborted();
  }

  // This rank's boxes of a parallel .npy read or write; one status either way.
  void io(const Command& c) {
    epoch_ = c.epoch;
    Status st;
    st.epoch = c.epoch;
    try {
      io::run_io_part(io::decode_io(c.plan), mpi_.rank(), setup_.store, setup_.io_fault_rank);
    } catch (const std::exception&) {
      st = failure_status(mpi_.rank(), c.epoch);
    }
    report(std::move(st));
  }

  // Collective with every rank (rank 0 joins as it sends this); answered with one status.
  void join_peers(const Command& c) {
    Status st;
    st.epoch = c.epoch;
    try {
      DeviceBackend* dev = setup_.dev;
      if (dev) peers_ = dev->join_peers(std::string(c.plan.begin(), c.plan.end()), mpi_.rank(), mpi_.size());
      if (!peers_) throw Error(dev ? "the device cannot join peers" : "no device to join peers with");
    } catch (const std::exception&) {
      st = failure_status(mpi_.rank(), c.epoch);
    }
    report(std::move(st));
  }

  void run(const Command& c) {
    epoch_ = c.epoch;
    ++runs_;
    stopped_ = false;
    Status st;
    st.epoch = c.epoch;
    const int me = mpi_.rank();
    const bool tracing = (c.flags & Command::Trace) != 0;
    const double origin = trace::now_us();
    if (tracing) trace::begin_capture();
    run_traced(c, st, me);
    if (st.kind != Status::Done) mpi_.groups().retire_all();  // as for an Abort, above
    if (tracing) st.trace = trace::encode_events(trace::end_capture(), origin);
    report(std::move(st));
  }

  // This rank's part of a plan sent as its choices: lowered here, none of the others'.
  plan::ShardedGraph own_part(const std::vector<char>& bytes, int me) {
    const PlanChoices p = decode_choices(bytes);
    if (p.input.mesh.ranks != mpi_.size())
      throw InternalError(
          cat_str("a plan for ", p.input.mesh.ranks, " ranks sent to a job of ", mpi_.size()));
    return plan::lower_choice(p.input, p.choice, me);
  }

  void run_traced(const Command& c, Status& st, int me) {
    try {
      const plan::ShardedGraph g = (c.flags & Command::Choices) ? own_part(c.plan, me) : decode_plan(c.plan);
      if (g.num_ranks != mpi_.size())
        throw InternalError(cat_str("a plan for ", g.num_ranks, " ranks sent to a job of ", mpi_.size()));
      // The program first: it joins the groups of the plan's collectives, which the other
      // members wait for whether or not this rank fails afterwards.
      comm::MpiTransport t(mpi_, c.epoch);
      RankProgram p(g, t, c.store, setup_.dev, &setup_.store);
      if (c.flags & Command::DevicePeers) {
        if (!peers_) throw InternalError("rank 0 sent a run over device peers this rank has not joined");
        p.use_device_peers(peers_.get());
      }
      if (auto fault = injected_fault(setup_.fault, me, runs_)) {
        if (*fault == "oom") {
          try {
            Value::alloc(DType::F64, {int64_t(1) << 47});  // 1 PiB: no machine has it
          } catch (const std::bad_alloc&) {
            throw Error("out of memory allocating a f64 block of shape {140737488355328} (TAPESTRY_FAULT)");
          }
        }
        throw Error("injected failure (TAPESTRY_FAULT)");
      }
      p.set_stop_check([this] { return abort_seen(); });
      comm::Backoff wait(std::chrono::microseconds(1000),
                         std::chrono::milliseconds(5));  // a halo is usually near
      while (!p.done()) {
        if (p.advance()) {
          wait.reset();
          continue;
        }
        if (stopped_ || aborted()) {
          st.kind = Status::Aborted;
          return;
        }
        if (p.collectives_in_flight()) wait.reset();  // yield, do not sleep: see rank_program.hpp
        wait.pause();
      }
      p.send_outputs();
      // Kept now: if another rank failed, rank 0 drops this key again (Command::Drop).
      p.keep_outputs();
      st.blocks = p.blocks_run();
      st.messages = t.messages_sent() + p.peer_messages();
      st.bytes = t.bytes_sent() + p.peer_bytes();
      st.transfer_bytes = p.transfer_bytes();
      st.combine_bytes = p.combine_bytes();
      st.gathered_bytes = p.gathered_bytes();
    } catch (const Cancelled&) {
      if (stopped_) st.kind = Status::Aborted;  // stopped between blocks by rank 0's abort
      else st = failure_status(me, c.epoch);
    } catch (const std::exception&) {
      st = failure_status(me, c.epoch);
    }
  }

  comm::Mpi& mpi_;
  const WorkerSetup& setup_;
  uint64_t epoch_ = 0;
  int64_t runs_ = 0;
  std::optional<Command> deferred_;
  std::unique_ptr<comm::DevicePeers> peers_;  // after a Peers command
  Driver driver_;                             // rank 0, after its Driver command
  std::unique_ptr<SalvageWatch> salvage_;     // on a job a driver launched
  bool stopped_ = false;                      // the current run saw rank 0's abort
  std::chrono::steady_clock::time_point last_probe_{};
};

}  // namespace

std::vector<char> encode_command(const Command& c) {
  ByteWriter w;
  w.header(kCommandMagic, kProtocolVersion);
  w.put<uint8_t>(c.kind);
  w.put<uint8_t>(c.flags);
  w.put(c.epoch);
  w.vec(c.plan);
  for (const auto* v : {&c.store.initial, &c.store.roots, &c.drop}) w.vec(*v);
  return w.take();
}

Command decode_command(std::span<const char> bytes) {
  ByteReader r(bytes, "command");
  r.header(kCommandMagic, kProtocolVersion);
  Command c;
  const uint8_t kind = r.get<uint8_t>();
  c.flags = r.get<uint8_t>();
  c.epoch = r.get<uint64_t>();
  if (c.flags & ~(Command::Trace | Command::DevicePeers | Command::Choices))
    r.reject(cat_str("command flags ", int(c.flags)));
  if (kind < Command::Run || kind > Command::Restore) r.reject(cat_str("command kind ", int(kind)));
  c.kind = static_cast<Command::Kind>(kind);
  c.plan = r.vec<char>();
  for (auto* v : {&c.store.initial, &c.store.roots, &c.drop}) *v = r.vec<uint64_t>();
  r.end();
  return c;
}

std::vector<char> encode_status(const Status& s) {
  ByteWriter w;
  w.header(kStatusMagic, kProtocolVersion);
  w.put<uint8_t>(s.kind);
  w.put<uint8_t>(s.error);
  w.put<uint8_t>(s.caps);
  w.put(s.epoch);
  w.put(s.blocks);
  w.put(s.messages);
  w.put(s.bytes);
  w.put(s.transfer_bytes);
  w.put(s.combine_bytes);
  w.put(s.gathered_bytes);
  w.put(s.spills);
  w.put(s.spill_bytes);
  w.put(s.spill_readbacks);
  w.str(s.message);
  w.vec(s.trace);
  return w.take();
}

Status decode_status(std::span<const char> bytes) {
  ByteReader r(bytes, "status");
  r.header(kStatusMagic, kProtocolVersion);
  Status s;
  const uint8_t kind = r.get<uint8_t>();
  const uint8_t error = r.get<uint8_t>();
  if (kind < Status::Done || kind > Status::Hello || error > Status::Cancelled)
    r.reject(cat_str("status kind ", int(kind), "/", int(error)));
  s.kind = static_cast<Status::Kind>(kind);
  s.error = static_cast<Status::Error>(error);
  s.caps = r.get<uint8_t>();
  s.epoch = r.get<uint64_t>();
  s.blocks = r.get<int64_t>();
  s.messages = r.get<int64_t>();
  s.bytes = r.get<int64_t>();
  s.transfer_bytes = r.get<int64_t>();
  s.combine_bytes = r.get<int64_t>();
  s.gathered_bytes = r.get<int64_t>();
  s.spills = r.get<int64_t>();
  s.spill_bytes = r.get<int64_t>();
  s.spill_readbacks = r.get<int64_t>();
  s.message = r.str();
  s.trace = r.vec<char>();
  r.end();
  return s;
}

static_assert(int(Status::User) == int(Failure::User) && int(Status::Internal) == int(Failure::Internal) &&
              int(Status::Cancelled) == int(Failure::Cancelled));

Status failure_status(int rank, uint64_t epoch) {
  const Failure f = current_failure(rank);
  return Status::failed(static_cast<Status::Error>(f.kind), epoch, f.message);
}

void throw_failure(const Status& s) { rethrow(Failure{static_cast<Failure::Kind>(s.error), s.message}); }

int worker_main(comm::Mpi& mpi, const WorkerSetup& setup) {
  internal_check(mpi.rank() != 0);
  return Worker(mpi, setup).serve();
}

}  // namespace tapestry
