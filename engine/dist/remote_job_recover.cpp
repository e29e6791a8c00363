// A driver's MPI job after a loss (remote_job.hpp): the old job ended, a new one launched (on
// fewer ranks with --shrink), every stored tensor loaded back from the salvage folder.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>

#include "engine/dist/remote_job.hpp"
#include "engine/dist/replica.hpp"
#include "engine/ir/error.hpp"
#include "engine/store/shard_file.hpp"
#include "engine/telemetry/trace.hpp"

namespace tapestry {

namespace {

using Clock = std::chrono::steady_clock;

std::string join_names(const std::vector<std::string>& names, size_t max = 8) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < max; ++i) s += cat_str(i ? ", " : "", names[i]);
  if (names.size() > max) s += cat_str(", ... (", names.size() - max, " more)");
  return s;
}

}  // namespace

RemoteJob::Recovered RemoteJob::recover(const std::string& what, bool salvaged) {
  const auto t0 = Clock::now();
  ++recovery_.job_relaunches;
  link_.close();
  end_child(salvaged ? 0 : 10);  // without the head's word, the ranks still running salvage first
  const std::string old_dir = salvage_dir_;
  const std::set<std::pair<uint64_t, int>> have = salvaged_pieces(old_dir);
  const int old_ranks = settings_.ranks;
  std::set<int> saved_themselves;
  for (int r = 0; r < old_ranks; ++r)
    if (std::filesystem::exists(cat_str(old_dir, "/w", r, ".done"))) saved_themselves.insert(r);
  // Each old rank's pieces go to one rank of the new job: the same one, or with --shrink the
  // survivors' to the first ranks in order and the lost ranks' spread over the new job.
  const int lost_ranks = old_ranks - static_cast<int>(saved_themselves.size());
  const int new_ranks = settings_.shrink && lost_ranks > 0 ? std::max(2, old_ranks - lost_ranks) : old_ranks;
  std::vector<int> to_new(static_cast<size_t>(old_ranks));
  if (new_ranks == old_ranks) {
    for (int r = 0; r < old_ranks; ++r) to_new[r] = r;
  } else {
    int next = 0;
    for (int r : saved_themselves) to_new[r] = next++ % new_ranks;
    for (int r = 0; r < old_ranks; ++r)
      if (!saved_themselves.count(r)) to_new[r] = next++ % new_ranks;
  }
  settings_.notify(cat_str("tapestry: ", what, "; relaunching the MPI job on ", new_ranks, " ranks",
                           new_ranks != old_ranks ? " (--shrink)" : "", " and restoring its stored tensors"));
  RestoreJob job;
  job.dir = old_dir;
  std::vector<uint64_t> keep_replicated;
  std::vector<std::string> restored, lost_names;
  std::vector<NodeRef> lost_leaves;
  std::vector<std::pair<NodeRef, std::vector<plan::Shard>>> moved;  // new layouts on fewer ranks
  int64_t from_replicas = 0, from_survivors = 0, lost_count = 0;
  for (const auto& [id, layout] : settings_.catalog->live()) {
    std::set<int> ranks;
    for (const plan::Shard& sh : layout.shards) ranks.insert(sh.rank);
    bool ok = layout.ranks == old_ranks, by_replica = false;
    for (int r : ranks) {
      ok = ok && have.count({id, r});
      by_replica = by_replica || !saved_themselves.count(r);
    }
    const std::string name = settings_.name_of ? settings_.name_of(id) : std::string();
    const std::string label = name.empty() ? cat_str("%", id) : name;
    if (!ok) {
      ++lost_count;
      lost_names.push_back(label);
      if (NodeRef leaf = layout.leaf.lock()) lost_leaves.push_back(std::move(leaf));
      settings_.catalog->mark_lost(
          id, cat_str(name.empty() ? "a stored tensor" : "tp.env." + name, " was lost with the MPI job (",
                      what, "): no copy of some of its pieces survived"));
      continue;
    }
    for (int r : ranks) job.entries.push_back({id, r, to_new[r]});
    if (new_ranks != old_ranks)
      if (NodeRef leaf = layout.leaf.lock()) {
        std::vector<plan::Shard> shards = layout.shards;
        for (plan::Shard& sh : shards) sh.rank = to_new[sh.rank];
        moved.emplace_back(std::move(leaf), std::move(shards));
      }
    if (replicated_.count(id)) keep_replicated.push_back(id);
    if (!name.empty()) restored.push_back(name);
    ++(by_replica ? from_replicas : from_survivors);
  }
  settings_.ranks = new_ranks;
  // What the kept replicas take stays counted against the budget (on fewer ranks, the same).
  std::map<uint64_t, int64_t> kept_bytes;
  for (uint64_t k : keep_replicated)
    if (auto it = replica_bytes_.find(k); it != replica_bytes_.end()) kept_bytes.insert(*it);
  replicated_.clear();
  replica_bytes_.clear();
  replicated_bytes_ = 0;
  for (int tries = 0;; ++tries) {
    try {
      try {
        launch();
      } catch (const Error& e) {  // a process lost while the new job starts is one more loss
        throw LinkClosed(e.what());
      }
      auto expect_done = [this](JobLink::Kind kind, const std::vector<char>& body) {
        link_.send(kind, body);
        for (;;) {
          std::optional<JobLink::Frame> f = link_.receive(1);
          if (!f) {
            int st = 0;
            if (child_ > 0 && waitpid(child_, &st, WNOHANG) == child_) throw LinkClosed("the MPI job ended");
            continue;
          }
          if (f->kind == JobLink::Lost) throw LinkClosed("a rank was lost while restoring");
          ByteReader r(f->body, "job result");
          check_result(r);
          return;
        }
      };
      if (!job.entries.empty()) expect_done(JobLink::Restore, encode_restore(job));
      if (!keep_replicated.empty()) {
        ByteWriter w;
        w.vec(keep_replicated);
        expect_done(JobLink::Replicate, w.take());
        replicated_.insert(keep_replicated.begin(), keep_replicated.end());
        replica_bytes_ = kept_bytes;
        replicated_bytes_ = 0;
        for (const auto& [k, b] : kept_bytes) replicated_bytes_ += b;
      }
      break;
    } catch (const LinkClosed& e) {
      link_.close();
      end_child(2);
      ++recovery_.job_relaunches;
      settings_.notify(cat_str("tapestry: the new MPI job was lost while it started or was restored (",
                               e.what(), "); relaunching it again"));
      if (tries >= settings_.max_relaunches) {
        broken_ = cat_str("the MPI job could not be restored: ", e.what());
        throw Error(broken_);
      }
    } catch (const Error& e) {
      link_.close();
      end_child(2);
      broken_ = cat_str("the MPI job could not be restored: ", e.what());
      throw Error(broken_);
    }
  }
  for (auto& [leaf, shards] : moved) settings_.catalog->register_stored(leaf, std::move(shards), new_ranks);
  recovery_.restored_from_replicas += static_cast<uint64_t>(from_replicas);
  recovery_.restored_from_survivors += static_cast<uint64_t>(from_survivors);
  recovery_.tensors_lost += static_cast<uint64_t>(lost_count);
  std::error_code ec;
  std::filesystem::remove_all(old_dir, ec);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  std::string msg = cat_str("tapestry: the MPI job runs again on ", settings_.ranks, " ranks (",
                            generation_ - 1, " relaunch(es), ", static_cast<int>(took * 10) / 10.0,
                            " s); restored ", from_replicas + from_survivors, " stored tensor(s)");
  if (!restored.empty()) msg += cat_str(" (", join_names(restored), ")");
  msg += cat_str(": ", from_survivors, " from the surviving ranks, ", from_replicas, " with buddy replicas");
  std::string savers;
  for (int r : saved_themselves) savers += cat_str(savers.empty() ? "" : ", ", r);
  msg += cat_str(" (rank(s) ", savers.empty() ? "none" : savers, " saved their pieces)");
  if (lost_count)
    msg += cat_str("; ", lost_count, " with no surviving copy: ", join_names(lost_names),
                   " (recomputed from lineage or read from the last checkpoint where they have one)");
  settings_.notify(msg);
  if (trace::enabled())
    trace::record({"recover", "job", 0, trace::kPhases, trace::now_us() - took * 1e6, took * 1e6,
                   cat_str("\"restored_from_survivors\":", from_survivors,
                           ",\"restored_from_replicas\":", from_replicas, ",\"lost\":", lost_count)});
  return {lost_count ? join_names(lost_names) : std::string(), std::move(lost_leaves),
          new_ranks != old_ranks};
}

}  // namespace tapestry
