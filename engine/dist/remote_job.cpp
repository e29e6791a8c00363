#include "engine/dist/remote_job.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "engine/dist/head.hpp"
#include "engine/dist/job_processes.hpp"
#include "engine/dist/plan_wire.hpp"
#include "engine/dist/replica.hpp"
#include "engine/dist/salvage_watch.hpp"
#include "engine/dist/worker.hpp"
#include "engine/ir/error.hpp"
#include "engine/store/shard_file.hpp"
#include "engine/telemetry/cancel.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"
#include "engine/telemetry/trace.hpp"

extern char** environ;

namespace tapestry {

namespace {

using Clock = std::chrono::steady_clock;

// The driver's job, ended at exit when its session has not ended it (os.exit skips main's
// destructors): the job stops at once instead of noticing the driver gone.
RemoteJob* g_remote = nullptr;

void shutdown_at_exit() {
  if (g_remote) g_remote->shutdown();
}

}  // namespace

RemoteJob::RemoteJob(Settings s) : settings_(std::move(s)) {
  internal_check(settings_.ranks >= 1 && settings_.catalog != nullptr);
  if (!settings_.notify)
    settings_.notify = [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); };
  if (settings_.work_dir.empty()) settings_.work_dir = cat_str("/tmp/tapestry-", getpid());
  release_outer_binding();  // before the job's launch: its mpirun and ranks inherit the CPUs
  token_ = random_token();
  listener_ = std::make_unique<JobListener>();
  for (int tries = 0;; ++tries) {
    try {
      launch();
      break;
    } catch (const Error& e) {  // a process lost while the first job starts: start it again
      if (tries >= settings_.max_relaunches) throw;
      ++recovery_.job_relaunches;
      settings_.notify(
          cat_str("tapestry: the MPI job was lost while it started (", e.what(), "); relaunching it"));
    }
  }
  watcher_ = std::thread([this] { watch(); });
  if (!g_remote) {
    g_remote = this;
    static const bool registered = (std::atexit(shutdown_at_exit), true);
    (void)registered;
  }
}

RemoteJob::~RemoteJob() {
  shutdown();
  if (g_remote == this) g_remote = nullptr;
}

void RemoteJob::launch() {
  ++generation_;
  salvage_dir_ = cat_str(settings_.work_dir, "/salvage-", generation_);
  std::error_code ec;
  std::filesystem::create_directories(salvage_dir_, ec);
  std::vector<std::string> argv_s = {"tapestry"};
  argv_s.insert(argv_s.end(), settings_.args.begin(), settings_.args.end());
  std::vector<char*> argv_p;
  for (std::string& a : argv_s) argv_p.push_back(a.data());
  std::string why;
  comm::LaunchEnv env = settings_.launch;
  env.relaunched = false;
  std::vector<std::string> args =
      comm::mpirun_command(settings_.ranks, static_cast<int>(argv_p.size()), argv_p.data(), env, why);
  if (args.empty()) throw Error(cat_str("cannot launch the MPI job: ", why));
  // A lost worker must leave rank 0 running, to salvage what the others hold.
  args.insert(args.begin() + 1, {"--mca", "orte_abort_on_non_zero_status", "0"});
  // Shared memory's single copy reads a large message straight from the sender's memory
  // (process_vm_readv): when the sender dies mid-message, the reader fails and aborts, and the
  // pieces it held die with it. Copied through the shared segment, a survivor only waits.
  if (!std::getenv("OMPI_MCA_btl_vader_single_copy_mechanism"))
    args.insert(args.begin() + 1, {"--mca", "btl_vader_single_copy_mechanism", "none"});
  const JobAddress address{host_name(), listener_->port(), token_, static_cast<int>(getpid()), salvage_dir_};
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e)
    if (!outer_launch_variable(*e)) envs.emplace_back(*e);
  envs.push_back("TAPESTRY_JOB=" + format_job_address(address));
  std::vector<char*> cargs, cenv;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  for (std::string& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();
  std::fflush(nullptr);
  child_ = fork();
  if (child_ < 0) throw Error(cat_str("cannot launch the MPI job: ", std::strerror(errno)));
  if (child_ == 0) {
    // Its own process group: a Ctrl-C at the terminal is the driver's to handle (it cancels the
    // request), not mpirun's (it would end the job). It ends when the driver does.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // its ranks follow: they watch rank 0 and the driver
    if (getppid() != parent) _exit(1);
    if (devnull >= 0) dup2(devnull, 0);
    execve(cargs[0], cargs.data(), cenv.data());
    _exit(127);
  }
  if (devnull >= 0) ::close(devnull);
  setpgid(child_, child_);  // also here: whichever runs first
  // The head connects back once every rank started.
  const auto end = Clock::now() + std::chrono::seconds(120);
  size_t most_ranks = 0;
  while (!link_.open()) {
    // A rank lost while the job starts: its MPI_Init partners would wait on it, and mpirun
    // takes its kill timeouts to give up.
    const size_t now_ranks = ranks_of(child_).size();
    if (now_ranks < most_ranks) {
      end_child(0);
      throw Error("a rank of the new MPI job died while it started");
    }
    most_ranks = std::max(most_ranks, now_ranks);
    int st = 0;
    if (waitpid(child_, &st, WNOHANG) == child_) {
      child_ = -1;
      throw Error(cat_str("the MPI job did not start (", args[0], " exited with status ",
                          WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), ")"));
    }
    if (Clock::now() > end) {
      end_child(0);
      throw Error("the MPI job did not start in 120 s");
    }
    JobLink l = listener_->accept(0.2);
    if (!l.open()) continue;
    std::optional<JobLink::Frame> hello;
    try {
      hello = l.receive(30);
    } catch (const std::exception&) {
      continue;
    }
    if (!hello || hello->kind != JobLink::Hello) continue;
    try {
      ByteReader r(hello->body, "the job's hello");
      if (r.str() != token_) continue;  // not our job's head
      const int ranks = r.get<int32_t>();
      device_transport_ = r.str();
      std::istringstream who(r.str());
      who >> head_pid_ >> head_host_;
      if (ranks != settings_.ranks)
        throw Error(cat_str("the MPI job has ", ranks, " ranks, not ", settings_.ranks));
    } catch (const Error&) {
      end_child(0);
      throw;
    }
    link_ = std::move(l);
  }
}

// Ends the job: once its ranks have exited (a lost job's survivors salvage first), or after
// grace_s, mpirun and every rank still running are killed; mpirun's own shutdown (its kill
// timeouts, its banners) is not waited for.
void RemoteJob::end_child(double grace_s) {
  if (child_ <= 0) return;
  const auto end = Clock::now() + std::chrono::duration<double>(grace_s);
  int st = 0;
  while (waitpid(child_, &st, WNOHANG) != child_) {
    const std::vector<pid_t> ranks = ranks_of(child_);
    if (Clock::now() >= end || ranks.empty()) {
      for (pid_t r : ranks) kill(r, SIGKILL);
      kill(-child_, SIGKILL);
      waitpid(child_, &st, 0);
      break;
    }
    usleep(20'000);
  }
  child_ = -1;
}

void RemoteJob::watch() {
  while (!stop_watch_) {
    for (int i = 0; i < 4 && !stop_watch_; ++i) usleep(50'000);
    std::unique_lock lock(mu_, std::try_to_lock);
    if (stop_watch_ || !lock.owns_lock() || pending_loss_ || shut_ || !broken_.empty() || !link_.open() ||
        child_ <= 0)
      continue;
    std::string what;
    bool salvaged = false;
    auto read_link = [&](double wait_s) {
      try {
        std::optional<JobLink::Frame> f = link_.receive(wait_s);
        if (f && f->kind == JobLink::Lost) {
          ByteReader r(f->body, "the job's loss notice");
          what = r.str();
          salvaged = true;
        }
      } catch (const LinkClosed& e) {
        what = head_pid_ && !alive(head_pid_)
                   ? cat_str("rank 0 (pid ", head_pid_, " on ", head_host_, ") died")
                   : cat_str("the MPI job ended (", e.what(), ")");
      } catch (const Error& e) {
        what = cat_str("the MPI job's link failed (", e.what(), ")");
      }
    };
    read_link(0);
    if (what.empty()) {
      // A rank gone: the head says so within a moment, its survivors having salvaged.
      std::set<int> present;
      for (const RankProcess& p : rank_processes(child_)) present.insert(p.rank);
      std::string gone;
      for (int r = 0; r < settings_.ranks && gone.empty(); ++r)
        if (!present.count(r)) gone = cat_str("rank ", r, " died");
      if (gone.empty()) continue;
      read_link(2.0);
      if (what.empty()) what = gone;
    }
    pending_loss_ = PendingLoss{what, salvaged};
    settings_.notify(cat_str("tapestry: ", what, "; the MPI job is relaunched on ",
                             settings_.shrink ? "fewer" : "as many",
                             " ranks and its stored tensors restored ", "at the next observation"));
  }
}

std::vector<char> RemoteJob::request(JobLink::Kind kind, const std::vector<char>& body) {
  const std::unique_lock lock(mu_);
  for (int attempt = 0;; ++attempt) {
    if (!broken_.empty()) throw Error(broken_);
    if (shut_) throw Error("the MPI job was shut down");
    std::string lost;
    bool salvaged = false;
    if (pending_loss_) {  // the idle watcher saw it (and told the user)
      lost = pending_loss_->what;
      salvaged = pending_loss_->salvaged;
      pending_loss_.reset();
    } else {
      try {
        link_.send(kind, body);
        bool cancel_sent = false;
        std::optional<Progress> bar;  // the head's progress, on the driver's listener
        ProgressState seen;
        // The driver watches the job's processes too: the head reports a loss within seconds,
        // unless its own thread is stuck in an MPI call on the dead rank. Then the driver asks the
        // ranks to salvage itself (their salvage threads answer, engine/dist/salvage_watch.hpp).
        auto last_look = Clock::now();
        std::optional<Clock::time_point> lost_since;
        std::map<pid_t, Clock::time_point> stopped_since;
        std::string seen_lost;
        for (;;) {
          std::optional<JobLink::Frame> f = link_.receive(0.05);
          if (!f && child_ > 0 && Clock::now() - last_look > std::chrono::milliseconds(200)) {
            const auto now = last_look = Clock::now();
            if (!lost_since) {
              const std::vector<RankProcess> procs = rank_processes(child_);
              std::set<int> present;
              for (const RankProcess& p : procs) {
                present.insert(p.rank);
                if (!p.stopped) stopped_since.erase(p.pid);
                else if (!stopped_since.count(p.pid)) stopped_since[p.pid] = now;
                else if (now - stopped_since[p.pid] > std::chrono::seconds(4))
                  seen_lost =
                      cat_str("rank ", p.rank, " (pid ", p.pid, ") is stopped (SIGSTOP) and counts as lost");
              }
              for (int r = 0; r < settings_.ranks && seen_lost.empty(); ++r)
                if (!present.count(r)) seen_lost = cat_str("rank ", r, " died");
              if (!seen_lost.empty()) lost_since = now;
            } else if (now - *lost_since > std::chrono::seconds(5)) {
              std::vector<int> live;
              for (const RankProcess& p : rank_processes(child_))
                if (!p.stopped && p.rank >= 0) live.push_back(p.rank);
              request_salvage(salvage_dir_);
              wait_salvaged(salvage_dir_, live, 10.0);
              lost = seen_lost;
              salvaged = true;
              break;
            }
          }
          if (!f) {
            if (!cancel_sent && cancel_requested()) {
              link_.send(JobLink::Cancel, {});
              cancel_sent = true;
            }
            int st = 0;
            if (child_ > 0 && waitpid(child_, &st, WNOHANG) == child_) {
              child_ = -1;
              // Its last words may still be in the socket.
              if (!(f = link_.receive(0.5))) throw LinkClosed("the MPI job ended");
            } else {
              continue;
            }
          }
          if (f->kind == JobLink::Result) return std::move(f->body);
          if (f->kind == JobLink::Progress) {
            ByteReader r(f->body, "the job's progress");
            ProgressState now{r.get<double>(), r.get<int64_t>(), r.get<int64_t>()};
            if (!bar || now.blocks_done < seen.blocks_done) bar.emplace(now.blocks_total), seen = {};
            bar->advance(now.blocks_done - seen.blocks_done, now.bytes_moved - seen.bytes_moved);
            seen = now;
            continue;
          }
          if (f->kind == JobLink::Lost) {
            ByteReader r(f->body, "the job's loss notice");
            lost = r.str();
            salvaged = true;
            break;
          }
        }
      } catch (const LinkClosed& e) {
        lost = head_pid_ && !alive(head_pid_)
                   ? cat_str("rank 0 (pid ", head_pid_, " on ", head_host_, ") died")
                   : cat_str("the MPI job ended (", e.what(), ")");
      }
    }
    if (lost.empty()) lost = "a rank was lost";
    if (attempt >= settings_.max_relaunches) {
      broken_ =
          cat_str("the MPI job was lost ", attempt + 1, " times in a row (last: ", lost, "); giving up");
      end_child(2);
      throw Error(broken_);
    }
    Recovered r = recover(lost, salvaged);
    // The request reads the old layouts on the old mesh: with a tensor missing or fewer ranks
    // the session plans it again (JobReplaced), after recomputing what it can.
    if (!r.lost_names.empty())
      throw JobReplaced(cat_str("the MPI job was lost (", lost, ") and with it ", r.lost_names,
                                ": no copy survived; the environment goes on without them"),
                        lost, std::move(r.lost), settings_.ranks);
    if (r.reshaped)
      throw JobReplaced(cat_str("the MPI job was lost (", lost, ") and replaced by one of ", settings_.ranks,
                                " ranks; the request must be planned again"),
                        lost, {}, settings_.ranks);
  }
}

void RemoteJob::count_head(ByteReader& r) {
  stats().bytes_read += r.get<uint64_t>();
  stats().bytes_written += r.get<uint64_t>();
  head_block_retries_ += r.get<int64_t>();
  job_spills_.spills += r.get<int64_t>();
  job_spills_.bytes += r.get<int64_t>();
  job_spills_.readbacks += r.get<int64_t>();
}

// The rest of a successful non-run request's result: the head's counts.
void RemoteJob::count_done(ByteReader& r) {
  for (int i = 0; i < 10; ++i) (void)r.get<int64_t>();  // no run: an empty report
  if (r.count(9) != 0) throw Error("job result rejected: values for a request without roots");
  (void)r.vec<char>();
  (void)r.vec<int32_t>();
  count_head(r);
}

// A failed request's error is thrown here (after the device transport it reports is kept).
void RemoteJob::check_result(ByteReader& r) {
  if (r.get<uint8_t>() == 0) return;
  const Status st = decode_status(r.vec<char>());
  device_transport_ = r.str();
  throw_failure(st);
}

namespace {

void put_keys(ByteWriter& w, const StoreKeys& keys) {
  w.vec(keys.initial);
  w.vec(keys.roots);
}

}  // namespace

std::vector<uint64_t> RemoteJob::to_replicate(const StoreKeys& keys,
                                              const std::vector<int64_t>& bytes) const {
  std::vector<uint64_t> out;
  if (!settings_.replicas || settings_.ranks < 2) return out;
  if (settings_.replicate_roots && !settings_.replicate_roots()) return out;
  int64_t planned = replicated_bytes_;
  for (size_t i = 0; i < keys.roots.size(); ++i) {
    if (!keys.roots[i]) continue;
    // A replica doubles what the tensor takes on a rank: kept only while both fit the budget.
    const int64_t per_rank = bytes[i] / settings_.ranks + 1;
    if (settings_.replica_budget > 0 && planned + 2 * per_rank > settings_.replica_budget) continue;
    planned += 2 * per_rank;
    out.push_back(keys.roots[i]);
  }
  return out;
}

RunReport RemoteJob::run_request(bool whole, const std::vector<char>& plan, const StoreKeys& keys,
                                 int64_t blocks, const std::vector<NodeRef>& leaves,
                                 const std::vector<NodeRef>& roots) {
  std::vector<int64_t> root_bytes;
  for (size_t i = 0; i < keys.roots.size(); ++i)
    root_bytes.push_back(
        i < roots.size() ? numel(roots[i]->shape) * static_cast<int64_t>(dtype_size(roots[i]->dtype)) : 0);
  const std::vector<uint64_t> replicate = to_replicate(keys, root_bytes);
  ByteWriter w;
  w.put<uint8_t>(whole ? 1 : 0);
  w.vec(plan);
  put_keys(w, keys);
  w.put(blocks);
  w.size(leaves.size());
  for (const NodeRef& n : leaves) {
    w.put(n->id);
    put_value(w, *n->value);
  }
  w.vec(replicate);
  const bool tracing = trace::enabled();
  w.put<uint8_t>(tracing ? 1 : 0);
  const double origin = trace::now_us();
  const std::vector<char> reply = request(JobLink::Run, w.take());
  ByteReader r(reply, "job result");
  check_result(r);
  RunReport report;
  report.blocks = r.get<int64_t>();
  report.messages = r.get<int64_t>();
  report.bytes = r.get<int64_t>();
  report.move_s = r.get<double>();
  report.device_blocks = r.get<int64_t>();
  report.bytes_to_device = r.get<int64_t>();
  report.bytes_from_device = r.get<int64_t>();
  report.transfer_bytes = r.get<int64_t>();
  report.combine_bytes = r.get<int64_t>();
  report.gathered_bytes = r.get<int64_t>();
  std::map<uint64_t, const NodeRef*> by_id;
  for (const NodeRef& n : roots) by_id[n->id] = &n;
  for (size_t i = 0, n = r.count(9); i < n; ++i) {
    const uint64_t id = r.get<uint64_t>();
    std::shared_ptr<Value> v = get_value(r);
    auto it = by_id.find(id);
    if (it != by_id.end() && !(*it->second)->value) set_value(**it->second, std::move(v));
  }
  const std::vector<char> events = r.vec<char>();
  const std::vector<int32_t> pids = r.vec<int32_t>();
  count_head(r);
  device_transport_ = r.str();
  r.end();
  if (tracing && !events.empty()) {
    std::vector<trace::Event> decoded = trace::decode_events(events, origin);
    for (size_t i = 0; i < decoded.size(); ++i) {
      decoded[i].pid = i < pids.size() ? pids[i] : 0;
      trace::record(std::move(decoded[i]));
    }
  }
  for (size_t i = 0; i < keys.roots.size(); ++i)
    for (uint64_t k : replicate)
      if (keys.roots[i] == k) {
        replicated_.insert(k);
        replica_bytes_[k] = 2 * (root_bytes[i] / settings_.ranks + 1);
        replicated_bytes_ += replica_bytes_[k];
      }
  return report;
}

namespace {

// The leaves of `g` that rank 0 holds as values (the driver's data), once each.
std::vector<NodeRef> held_leaves(const plan::ShardedGraph& g, const StoreKeys& keys) {
  std::vector<NodeRef> out;
  std::set<uint64_t> seen;
  for (size_t i = 0; i < g.initial.size(); ++i) {
    if (!keys.initial.empty() && keys.initial[i] != 0) continue;
    const Node* n = g.find(g.initial[i].tensor);
    if (n && n->value && seen.insert(n->id).second) out.push_back(n->shared_from_this());
  }
  return out;
}

}  // namespace

RunReport RemoteJob::run_plan(const plan::ShardedGraph& g, const StoreKeys& keys) {
  std::vector<NodeRef> roots;
  for (uint64_t id : g.roots)
    if (const Node* n = g.find(id)) roots.push_back(n->shared_from_this());
  return run_request(true, encode_plan(g), keys, static_cast<int64_t>(g.blocks.size()), held_leaves(g, keys),
                     roots);
}

RunReport RemoteJob::run_own_parts(const PlanChoices& plan, const plan::ShardedGraph& mine,
                                   const StoreKeys& keys, int64_t blocks) {
  std::vector<NodeRef> roots;
  for (uint64_t id : mine.roots)
    if (const Node* n = mine.find(id)) roots.push_back(n->shared_from_this());
  return run_request(false, encode_choices(plan), keys, blocks, held_leaves(mine, keys), roots);
}

void RemoteJob::run_io(std::vector<char> job, const std::function<void()>&) {
  const std::vector<char> reply = request(JobLink::Io, job);
  ByteReader r(reply, "job result");
  check_result(r);
  count_done(r);
}

void RemoteJob::drop_on_workers(const std::vector<uint64_t>& keys) {
  for (uint64_t k : keys) {
    replicated_.erase(k);
    auto it = replica_bytes_.find(k);
    if (it != replica_bytes_.end()) replicated_bytes_ -= it->second, replica_bytes_.erase(it);
  }
  if (shut_ || keys.empty() || !broken_.empty()) return;
  const std::unique_lock lock(mu_);
  if (pending_loss_) return;  // the next request replaces the job: nothing to drop there
  ByteWriter w;
  w.vec(keys);
  try {
    link_.send(JobLink::Drop, w.take());  // unanswered; a loss shows at the next request
  } catch (const LinkClosed&) {
  }
}

void RemoteJob::replicate(const std::vector<uint64_t>& keys) {
  if (keys.empty() || !settings_.replicas || settings_.ranks < 2) return;
  // Within the budget, as a run's roots are (to_replicate): a tensor bound to tp.env or
  // recomputed after a loss gets a replica only while both copies fit.
  std::vector<uint64_t> fit;
  std::vector<int64_t> cost;
  int64_t planned = replicated_bytes_;
  for (uint64_t k : keys) {
    if (replicated_.count(k) || std::find(fit.begin(), fit.end(), k) != fit.end()) continue;
    const StoredLayout* l = settings_.catalog->layout(k);
    const NodeRef leaf = l ? l->leaf.lock() : nullptr;
    const int64_t bytes = leaf ? numel(leaf->shape) * static_cast<int64_t>(dtype_size(leaf->dtype)) : 0;
    const int64_t per_rank = bytes / settings_.ranks + 1;
    if (settings_.replica_budget > 0 && planned + 2 * per_rank > settings_.replica_budget) continue;
    planned += 2 * per_rank;
    fit.push_back(k);
    cost.push_back(2 * per_rank);
  }
  if (fit.empty()) return;
  ByteWriter w;
  w.vec(fit);
  const std::vector<char> reply = request(JobLink::Replicate, w.take());
  ByteReader r(reply, "job result");
  check_result(r);
  for (size_t i = 0; i < fit.size(); ++i) {
    replicated_.insert(fit[i]);
    replica_bytes_[fit[i]] = cost[i];
    replicated_bytes_ += cost[i];
  }
}

void RemoteJob::shutdown() {
  stop_watch_ = true;
  if (watcher_.joinable()) watcher_.join();
  if (shut_) return;
  shut_ = true;
  try {
    if (link_.open()) link_.send(JobLink::Shutdown, {});
  } catch (const LinkClosed&) {
  }
  end_child(10);
  link_.close();
  std::error_code ec;
  std::filesystem::remove_all(settings_.work_dir, ec);
}

}  // namespace tapestry
