// Run frame body (driver -> head):
//   whole u8 (1: encode_plan's bytes, 0: encode_choices's); plan bytes; keys.initial; keys.roots;
//   blocks i64; count u64 of {wire id u64, value} (leaves the driver holds); replicate keys;
//   traced u8
// Result frame body (head -> driver):
//   0 u8, the RunReport's 10 fields, count u64 of {wire id u64, value} (the roots' values), a
//   traced run's events (encode_events's, from the request's start) and their ranks, the
//   head's file bytes read and written and block retries during the request, and the job's
//   spills, bytes spilled and read backs since the last result (every rank's; protocol 11); or
//   1 u8, encode_status's bytes of the failure; then the job's device transport (a string)
// Lost frame body: the lost ranks ("rank 2 (pid ...) died"), the job's broken() message.
#include "engine/dist/head.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "engine/dist/job_link.hpp"
#include "engine/dist/liveness.hpp"
#include "engine/dist/plan_wire.hpp"
#include "engine/dist/worker.hpp"
#include "engine/io/parallel_io.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/lower_rank.hpp"
#include "engine/run/retry.hpp"
#include "engine/telemetry/cancel.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"
#include "engine/telemetry/telemetry.hpp"
#include "engine/telemetry/trace.hpp"

namespace tapestry {

namespace {

// Frames read by a thread of their own, so a Cancel reaches a running request.
class Inbox {
 public:
  explicit Inbox(JobLink& link) : link_(link), reader_([this] { read(); }) {}
  // The reader is woken and joined: detached, it read on through this Inbox and the link after
  // both were gone (a segfault in JobLink::receive as the job ended).
  ~Inbox() {
    closing_ = true;
    link_.stop_receiving();
    reader_.join();
  }

  // The next request within timeout_s; nullopt when none, or when the driver is gone.
  std::optional<JobLink::Frame> next(double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return !queue_.empty() || gone_; });
    if (queue_.empty()) return std::nullopt;
    JobLink::Frame f = std::move(queue_.front());
    queue_.pop_front();
    return f;
  }
  bool gone() const { return gone_.load(); }

 private:
  void read() {
    for (;;) {
      std::optional<JobLink::Frame> f;
      try {
        f = link_.receive(-1);
      } catch (const std::exception&) {
        if (closing_) return;
        gone_ = true;
        request_cancel();
        cv_.notify_all();
        return;
      }
      if (!f) continue;
      if (f->kind == JobLink::Cancel) {
        request_cancel();
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(*f));
      cv_.notify_all();
    }
  }

  JobLink& link_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<JobLink::Frame> queue_;
  std::atomic<bool> gone_{false}, closing_{false};
  std::thread reader_;
};

// What the head's own process counted during a request that the driver's tp.stats() reports
// (rank 0's under mpirun without a driver): file bytes and block retries.
struct Counted {
  uint64_t bytes_read = 0, bytes_written = 0;
  int64_t block_retries = 0;
  Job::SpillCounts spilled;  // set by Head::counted(): since the last result, not the request's start
  static Counted now() { return {stats().bytes_read, stats().bytes_written, tapestry::block_retries(), {}}; }
  Counted since(const Counted& start) const {
    return {bytes_read - start.bytes_read,
            bytes_written - start.bytes_written,
            block_retries - start.block_retries,
            {}};
  }
};

struct Traced {
  std::vector<char> events;   // trace::encode_events's, from the request's start
  std::vector<int32_t> pids;  // each event's rank
};

std::vector<char> done_result(const RunReport& r,
                              const std::vector<std::pair<uint64_t, const Value*>>& values,
                              const std::string& transport, const Counted& counted,
                              const Traced& traced = {}) {
  ByteWriter w;
  w.put<uint8_t>(0);
  w.put(r.blocks);
  w.put(r.messages);
  w.put(r.bytes);
  w.put(r.move_s);
  w.put(r.device_blocks);
  w.put(r.bytes_to_device);
  w.put(r.bytes_from_device);
  w.put(r.transfer_bytes);
  w.put(r.combine_bytes);
  w.put(r.gathered_bytes);
  w.size(values.size());
  for (const auto& [id, v] : values) {
    w.put(id);
    put_value(w, *v);
  }
  w.vec(traced.events);
  w.vec(traced.pids);
  w.put(counted.bytes_read);
  w.put(counted.bytes_written);
  w.put(counted.block_retries);
  w.put(counted.spilled.spills);
  w.put(counted.spilled.bytes);
  w.put(counted.spilled.readbacks);
  w.str(transport);  // it changes when a failed run retires the device peers
  return w.take();
}

// Call in a catch block. The message is what rank 0 itself would have raised in Lua: a
// worker's failure already names its rank, and rank 0's own needs no "rank 0: ".
std::vector<char> failed_result(const std::string& transport) {
  Status st = failure_status(0, 0);
  try {
    throw;
  } catch (const std::bad_alloc&) {
  } catch (const std::exception& e) {
    st.message = e.what();
  }
  ByteWriter w;
  w.put<uint8_t>(1);
  w.vec(encode_status(st));
  w.str(transport);
  return w.take();
}

// The head's progress, sent to the driver's bar at most every 100 ms.
class ForwardProgress final : public ProgressListener {
 public:
  explicit ForwardProgress(JobLink& link) : link_(link) {}
  void start(int64_t total) override { send({0, total, 0}, true); }
  void update(const ProgressState& s) override { send(s, false); }
  void finish() override {}

 private:
  void send(const ProgressState& s, bool now) {
    const auto t = std::chrono::steady_clock::now();
    if (!now && t - last_ < std::chrono::milliseconds(100)) return;
    last_ = t;
    ByteWriter w;
    w.put(s.blocks_done);
    w.put(s.blocks_total);
    w.put(s.bytes_moved);
    try {
      link_.send(JobLink::Progress, w.take());
    } catch (const LinkClosed&) {
    }
  }
  JobLink& link_;
  std::chrono::steady_clock::time_point last_{};
};

class Head {
 public:
  Head(Coordinator& job, ShardStore& store, JobLink& link, const JobAddress& a, int io_fault_rank)
      : job_(job), store_(store), link_(link), address_(a), io_fault_rank_(io_fault_rank) {}

  int serve() {
    Inbox inbox(link_);
    ForwardProgress progress(link_);
    current_telemetry().progress_listener = &progress;
    for (;;) {
      std::optional<JobLink::Frame> f = inbox.next(0.1);
      if (inbox.gone()) return 0;  // the driver is gone: the job ends (the workers follow)
      if (!f) {
        if (job_.watch()) return lost(inbox);
        continue;
      }
      if (f->kind == JobLink::Shutdown) return 0;
      clear_cancel();
      start_ = Counted::now();
      if (f->kind == JobLink::Drop) {  // unanswered: a step's drops cost no round trip
        try {
          handle(*f);
        } catch (const std::exception& e) {
          fprintf(stderr, "tapestry: the job's rank 0: %s\n", e.what());
        }
        if (!job_.broken().empty()) return lost(inbox);
        continue;
      }
      std::vector<char> reply;
      try {
        reply = handle(*f);
      } catch (const std::exception&) {
        reply = failed_result(job_.device_transport());
      }
      if (!job_.broken().empty()) return lost(inbox);
      link_.send(JobLink::Result, reply);
    }
  }

 private:
  std::vector<char> handle(const JobLink::Frame& f) {
    ByteReader r(f.body, "job request");
    switch (f.kind) {
      case JobLink::Run: return run(r);
      case JobLink::Io: {
        const std::vector<io::IoTask> tasks = io::decode_io(f.body);
        job_.run_io(f.body, [&] { io::run_io_part(tasks, 0, store_, io_fault_rank_); });
        break;
      }
      case JobLink::Drop: {
        const std::vector<uint64_t> keys = r.vec<uint64_t>();
        for (uint64_t k : keys) store_.drop(k);
        job_.drop_on_workers(keys);
        break;
      }
      case JobLink::Replicate: job_.replicate(r.vec<uint64_t>()); break;
      case JobLink::Restore: job_.restore(f.body); break;
      default: throw Error(cat_str("job request rejected: kind ", int(f.kind)));
    }
    return done_result({}, {}, job_.device_transport(), counted());
  }

  std::vector<char> run(ByteReader& r) {
    const bool whole = r.get<uint8_t>() != 0;
    const std::vector<char> bytes = r.vec<char>();
    StoreKeys keys;
    keys.initial = r.vec<uint64_t>();
    keys.roots = r.vec<uint64_t>();
    const int64_t blocks = r.get<int64_t>();
    WireIds ids;
    std::optional<PlanChoices> choices;
    plan::ShardedGraph g;
    if (whole) {
      g = decode_plan(bytes, &ids);
    } else {
      choices = decode_choices(bytes, &ids);
      if (choices->input.mesh.ranks != job_.ranks())
        throw InternalError(
            cat_str("a plan for ", choices->input.mesh.ranks, " ranks sent to a job of ", job_.ranks()));
      g = plan::lower_choice(choices->input, choices->choice, 0);
    }
    // The driver's leaves: their values, held on rank 0 as the plan expects.
    for (size_t i = 0, n = r.count(9); i < n; ++i) {
      const uint64_t id = r.get<uint64_t>();
      std::shared_ptr<Value> v = get_value(r);
      auto it = ids.find(id);
      if (it == ids.end()) r.reject(cat_str("a value for node ", id, ", which the plan does not list"));
      if (!it->second->value) set_value(*it->second, std::move(v));
    }
    const std::vector<uint64_t> replicate = r.vec<uint64_t>();
    const bool tracing = r.get<uint8_t>() != 0;
    r.end();
    // A traced run's events, every rank's (the workers' come with their statuses), go back
    // to the driver's trace.
    const double origin = trace::now_us();
    struct Capture {
      bool on;
      std::vector<trace::Event> events;
      explicit Capture(bool tracing) : on(tracing) {
        if (on) trace::begin_capture();
      }
      ~Capture() { take(); }
      void take() {
        if (on) events = trace::end_capture(), on = false;
      }
    } capture(tracing);
    const RunReport report = whole ? job_.run_plan(g, keys) : job_.run_own_parts(*choices, g, keys, blocks);
    if (!replicate.empty()) job_.replicate(replicate);
    capture.take();
    Traced traced;
    if (!capture.events.empty()) {
      traced.events = trace::encode_events(capture.events, origin);
      for (const trace::Event& e : capture.events) traced.pids.push_back(e.pid);
    }
    std::unordered_map<const Node*, uint64_t> wire_of;
    for (const auto& [id, n] : ids) wire_of[n.get()] = id;
    std::vector<std::pair<uint64_t, const Value*>> values;
    auto add = [&](const Node* n) {
      auto it = wire_of.find(n);
      if (n && n->value && it != wire_of.end()) values.emplace_back(it->second, n->value.get());
    };
    if (choices) {
      for (const NodeRef& n : choices->input.roots) add(n.get());
    } else {
      for (uint64_t id : g.roots) add(g.find(id));
    }
    return done_result(report, values, job_.device_transport(), counted(), traced);
  }

  // A rank was lost: everything still held goes to the salvage folder, the driver is told, and
  // the job ends.
  int lost(Inbox& inbox) {
    job_.salvage(address_.salvage_dir);
    ByteWriter w;
    w.str(job_.lost_ranks());
    w.str(job_.broken());
    try {
      link_.send(JobLink::Lost, w.take());
    } catch (const LinkClosed&) {
      return 1;
    }
    // The driver ends the job now (it kills the process group); mpirun's abort banners are
    // not worth printing.
    for (int i = 0; i < 100 && !inbox.gone(); ++i) inbox.next(0.1);
    return 1;
  }

  // The request's counts; the job's spills since the last result that carried them, so none
  // is lost with a failed request's (a failure's result has no counts).
  Counted counted() {
    Counted c = Counted::now().since(start_);
    Job::SpillCounts all = job_.spills();  // the workers', and this process's store's:
    all.spills += store_.spills();
    all.bytes += store_.spill_bytes();
    all.readbacks += store_.readbacks();
    c.spilled = {all.spills - spills_sent_.spills, all.bytes - spills_sent_.bytes,
                 all.readbacks - spills_sent_.readbacks};
    spills_sent_ = all;
    return c;
  }

  Coordinator& job_;
  ShardStore& store_;
  JobLink& link_;
  Counted start_;  // at the request's start
  Job::SpillCounts spills_sent_;
  const JobAddress& address_;
  int io_fault_rank_;
};

}  // namespace

std::optional<JobAddress> parse_job_address(const std::string& text) {
  std::istringstream in(text);
  JobAddress a;
  if (!(in >> a.host >> a.port >> a.token >> a.driver_pid) || a.port <= 0) return std::nullopt;
  std::getline(in >> std::ws, a.salvage_dir);
  return a;
}

std::string format_job_address(const JobAddress& a) {
  return cat_str(a.host, " ", a.port, " ", a.token, " ", a.driver_pid, " ", a.salvage_dir);
}

int head_main(Coordinator& job, ShardStore& store, const JobAddress& address, int io_fault_rank) {
  JobLink link;
  try {
    link = JobLink::connect(address.host, address.port);
    ByteWriter w;
    w.str(address.token);
    w.put<int32_t>(job.ranks());
    w.str(job.device_transport());
    w.str(this_process());  // "PID HOST": the driver names rank 0 by it if it dies
    link.send(JobLink::Hello, w.take());
  } catch (const std::exception& e) {
    fprintf(stderr, "tapestry: the job's rank 0: %s\n", e.what());
    return 1;
  }
  return Head(job, store, link, address, io_fault_rank).serve();
}

}  // namespace tapestry
