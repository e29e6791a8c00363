#include "engine/dist/worker.hpp"

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <utility>

#include <unistd.h>

#include "engine/device/plugin.hpp"
#include "engine/dist/plan_wire.hpp"
#include "engine/io/parallel_io.hpp"
#include "engine/shard/rank_program.hpp"
#include "engine/telemetry/trace.hpp"
#include "engine/ir/error.hpp"
#include "engine/store/shard_store.hpp"

namespace tapestry {

namespace {

constexpr uint32_t kCommandMagic = 0x4d435054;  // "TPCM"
constexpr uint32_t kStatusMagic = 0x54535054;   // "TPST"
// 2: a Run command carries flags (Trace); a status carries the run's trace events.
// 3: a Run command carries store keys; Drop commands; Hello statuses.
// 4: Io commands (parallel .npy reads and writes).
// 5: Peers commands, the DevicePeers run flag, a Hello's caps.
constexpr uint32_t kProtocolVersion = 5;

template <class T> void put(std::vector<char>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

template <class T> bool get(std::span<const char>& in, T& v) {
  if (in.size() < sizeof(T)) return false;
  std::memcpy(&v, in.data(), sizeof(T));
  in = in.subspan(sizeof(T));
  return true;
}

bool header(std::span<const char>& in, uint32_t magic, const char* what, std::string& why) {
  uint32_t m = 0, v = 0;
  if (!get(in, m) || m != magic) return why = cat_str("not a ", what, " (bad magic)"), false;
  if (!get(in, v) || v != kProtocolVersion)
    return why = cat_str(what, " of protocol version ", v, ", this build speaks ", kProtocolVersion), false;
  return true;
}

// "rank r: " in front of a message, unless the executor already put it there.
std::string on_rank(int rank, const std::string& msg) {
  const std::string prefix = cat_str("rank ", rank, ": ");
  return msg.rfind(prefix, 0) == 0 ? msg : prefix + msg;
}

// TAPESTRY_FAULT=RANK:RUN[:oom]: whether this rank is to fail its run number `run`, and how.
std::optional<std::string> injected_fault(int rank, int64_t run) {
  const char* e = std::getenv("TAPESTRY_FAULT");
  if (!e) return std::nullopt;
  long r = -1, n = -1;
  char kind[16] = "";
  if (std::sscanf(e, "%ld:%ld:%15s", &r, &n, kind) < 2 || r != rank || n != run) return std::nullopt;
  return std::string(kind);
}

class Worker {
 public:
  explicit Worker(comm::Mpi& mpi) : mpi_(mpi) {}

  int serve() {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    Status hello{Status::Hello, Status::User, 0, 0, 0, 0, cat_str(getpid(), " ", host), {}};
    if (device::peers_wanted()) hello.caps |= Status::CanJoinPeers;
    report(hello);
    // A script's loop sends the next run within milliseconds: stay awake for it.
    comm::Backoff idle(std::chrono::microseconds(2000), std::chrono::milliseconds(20));
    for (;;) {
      std::optional<Command> c = next_command();
      if (!c) {
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
        for (uint64_t k : c->drop) shard_store().drop(k);
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
    Command c;
    std::string why;
    if (!decode_command(*bytes, c, why)) {
      // Answer anyway (epoch 0 means "whatever run you wait for"), so rank 0 does not wait.
      report(Status{Status::Failed, Status::Internal, 0, 0, 0, 0, on_rank(mpi_.rank(), "bad command: " + why), {}});
      return std::nullopt;
    }
    return c;
  }

  // Whether rank 0 aborted the current run; any other command waits for the loop.
  bool aborted() {
    if (deferred_) return false;
    std::optional<Command> c = next_command();
    if (!c) return false;
    if (c->kind == Command::Abort && c->epoch == epoch_) return true;
    if (c->kind == Command::Abort) return false;  // an older run's
    deferred_ = std::move(c);
    return false;
  }

  void report(const Status& s) { mpi_.post(0, comm::kTagStatus, std::make_shared<const std::vector<char>>(encode_status(s))); }

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
    const int me = mpi_.rank();
    Status st;
    st.epoch = c.epoch;
    try {
      io::run_io_part(io::decode_io(c.plan), me);
    } catch (const InternalError& e) {
      st = Status{Status::Failed, Status::Internal, c.epoch, 0, 0, 0, on_rank(me, e.what()), {}};
    } catch (const Error& e) {
      st = Status{Status::Failed, Status::User, c.epoch, 0, 0, 0, on_rank(me, e.what()), {}};
    } catch (const std::bad_alloc&) {
      st = Status{Status::Failed, Status::User, c.epoch, 0, 0, 0, on_rank(me, "out of memory"), {}};
    } catch (const std::exception& e) {
      st = Status{Status::Failed, Status::Internal, c.epoch, 0, 0, 0, on_rank(me, e.what()), {}};
    }
    report(st);
  }

  // Collective with every rank (rank 0 joins as it sends this); answered with one status.
  void join_peers(const Command& c) {
    Status st{Status::Done, Status::User, c.epoch, 0, 0, 0, {}, {}};
    try {
      DeviceBackend* dev = device::backend();
      if (dev) peers_ = dev->join_peers(std::string(c.plan.begin(), c.plan.end()), mpi_.rank(), mpi_.size());
      if (!peers_) throw Error(dev ? "the device cannot join peers" : "no device to join peers with");
    } catch (const std::exception& e) {
      st = Status{Status::Failed, Status::User, c.epoch, 0, 0, 0, on_rank(mpi_.rank(), e.what()), {}};
    }
    report(st);
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
    report(st);
  }

  void run_traced(const Command& c, Status& st, int me) {
    try {
      const plan::ShardedGraph g = decode_plan(c.plan);
      if (g.num_ranks != mpi_.size())
        throw InternalError(cat_str("a plan for ", g.num_ranks, " ranks sent to a job of ", mpi_.size()));
      // The program first: it joins the groups of the plan's collectives, which the other
      // members wait for whether or not this rank fails afterwards.
      comm::MpiTransport t(mpi_, c.epoch);
      RankProgram p(g, t, c.store, device::backend());
      if (c.flags & Command::DevicePeers) {
        if (!peers_) throw InternalError("rank 0 sent a run over device peers this rank has not joined");
        p.use_device_peers(peers_.get());
      }
      if (auto fault = injected_fault(me, runs_)) {
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
      comm::Backoff wait(std::chrono::microseconds(1000), std::chrono::milliseconds(5));  // a halo is usually near
      while (!p.done()) {
        if (p.advance()) {
          wait.reset();
          continue;
        }
        if (stopped_ || aborted()) {
          st.kind = Status::Aborted;
          return;
        }
        if (p.collectives_in_flight()) wait.reset();  // yield, do not sleep: see sharded_run.hpp
        wait.pause();
      }
      p.send_outputs();
      // Kept now: if another rank failed, rank 0 drops this key again (Command::Drop).
      p.keep_outputs();
      st.blocks = p.blocks_run();
      st.messages = t.messages_sent() + p.peer_messages();
      st.bytes = t.bytes_sent() + p.peer_bytes();
    } catch (const Cancelled& e) {
      if (stopped_) st.kind = Status::Aborted;  // stopped between blocks by rank 0's abort
      else st = Status{Status::Failed, Status::Cancelled, c.epoch, 0, 0, 0, on_rank(me, e.what()), {}};
    } catch (const Error& e) {
      st = Status{Status::Failed, Status::User, c.epoch, 0, 0, 0, on_rank(me, e.what()), {}};
    } catch (const std::bad_alloc&) {
      st = Status{Status::Failed, Status::User, c.epoch, 0, 0, 0, on_rank(me, "out of memory"), {}};
    } catch (const std::exception& e) {
      st = Status{Status::Failed, Status::Internal, c.epoch, 0, 0, 0, on_rank(me, e.what()), {}};
    }
  }

  comm::Mpi& mpi_;
  uint64_t epoch_ = 0;
  int64_t runs_ = 0;
  std::optional<Command> deferred_;
  std::unique_ptr<comm::DevicePeers> peers_;  // after a Peers command
  bool stopped_ = false;  // the current run saw rank 0's abort
  std::chrono::steady_clock::time_point last_probe_{};
};

}  // namespace

std::vector<char> encode_command(const Command& c) {
  std::vector<char> out;
  out.reserve(24 + c.plan.size());
  put(out, kCommandMagic);
  put(out, kProtocolVersion);
  put<uint8_t>(out, c.kind);
  put<uint8_t>(out, c.flags);
  put(out, c.epoch);
  put<uint64_t>(out, c.plan.size());
  out.insert(out.end(), c.plan.begin(), c.plan.end());
  for (const auto* v : {&c.store.initial, &c.store.roots, &c.drop}) {
    put<uint64_t>(out, v->size());
    for (uint64_t k : *v) put(out, k);
  }
  return out;
}

bool decode_command(std::span<const char> in, Command& c, std::string& why) {
  if (!header(in, kCommandMagic, "command", why)) return false;
  uint8_t kind = 0;
  uint64_t n = 0;
  if (!get(in, kind) || !get(in, c.flags) || !get(in, c.epoch) || !get(in, n)) return why = "truncated command", false;
  if (c.flags & ~(Command::Trace | Command::DevicePeers)) return why = cat_str("command flags ", int(c.flags)), false;
  if (kind < Command::Run || kind > Command::Peers) return why = cat_str("command kind ", int(kind)), false;
  if (n > in.size()) return why = cat_str("the command says ", n, " bytes of plan, it carries ", in.size()), false;
  c.kind = static_cast<Command::Kind>(kind);
  c.plan.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
  in = in.subspan(n);
  for (auto* v : {&c.store.initial, &c.store.roots, &c.drop}) {
    uint64_t k = 0;
    if (!get(in, k) || k > in.size() / 8) return why = "truncated store keys", false;
    v->resize(k);
    for (uint64_t& x : *v) get(in, x);
  }
  if (!in.empty()) return why = cat_str(in.size(), " bytes after the command"), false;
  return true;
}

std::vector<char> encode_status(const Status& s) {
  std::vector<char> out;
  put(out, kStatusMagic);
  put(out, kProtocolVersion);
  put<uint8_t>(out, s.kind);
  put<uint8_t>(out, s.error);
  put<uint8_t>(out, s.caps);
  put(out, s.epoch);
  put(out, s.blocks);
  put(out, s.messages);
  put(out, s.bytes);
  put<uint64_t>(out, s.message.size());
  out.insert(out.end(), s.message.begin(), s.message.end());
  put<uint64_t>(out, s.trace.size());
  out.insert(out.end(), s.trace.begin(), s.trace.end());
  return out;
}

bool decode_status(std::span<const char> in, Status& s, std::string& why) {
  if (!header(in, kStatusMagic, "status", why)) return false;
  uint8_t kind = 0, error = 0;
  uint64_t n = 0;
  if (!get(in, kind) || !get(in, error) || !get(in, s.caps) || !get(in, s.epoch) || !get(in, s.blocks) ||
      !get(in, s.messages) ||
      !get(in, s.bytes) || !get(in, n))
    return why = "truncated status", false;
  if (kind < Status::Done || kind > Status::Hello || error > Status::Cancelled)
    return why = cat_str("status kind ", int(kind), "/", int(error)), false;
  if (n > in.size()) return why = "status message length mismatch", false;
  s.kind = static_cast<Status::Kind>(kind);
  s.error = static_cast<Status::Error>(error);
  s.message.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
  in = in.subspan(n);
  uint64_t t = 0;
  if (!get(in, t) || t != in.size()) return why = "status trace length mismatch", false;
  s.trace.assign(in.begin(), in.end());
  return true;
}

int worker_main(comm::Mpi& mpi) {
  internal_check(mpi.rank() != 0);
  return Worker(mpi).serve();
}

}  // namespace tapestry
