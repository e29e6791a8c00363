// Parallel .npy I/O of sharded tensors, orchestrated: every rank reads or writes only its own
// boxes (engine/io/parallel_io.hpp has the per-rank part and the Io job's encoding).
#include "engine/session/sharded_io.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "engine/dist/worker.hpp"
#include "engine/ir/error.hpp"
#include "engine/session/session.hpp"

namespace tapestry::io {

namespace {

bool on_mpi(Session& s, int ranks) { return ranks > 1 && s.mpi_job_ranks() == ranks; }

// A message about the temporary names the file the user asked for.
std::string rename_path(std::string msg, const std::string& tmp, const std::string& path) {
  for (size_t at = msg.find(tmp); at != std::string::npos; at = msg.find(tmp, at + path.size()))
    msg.replace(at, tmp.size(), path);
  return msg;
}

// A message that names `path` (a rank's failure may not).
std::string naming(const std::string& path, const std::string& msg) {
  return msg.find(path) == std::string::npos ? cat_str("'", path, "': ", msg) : msg;
}

}  // namespace

void run_io(Session& s, const std::vector<IoTask>& tasks, int ranks) {
  const int fail_rank = s.config().io_fault_rank;
  if (on_mpi(s, ranks)) {
    s.coordinator()->run_io(encode_io(tasks), [&] { run_io_part(tasks, 0, s.shard_store(), fail_rank); });
    return;
  }
  // Loopback: this process holds every rank. Every rank runs, then the first failure is thrown.
  std::optional<Status> first;
  for (int r = 0; r < ranks; ++r) {
    try {
      run_io_part(tasks, r, s.shard_store(), fail_rank);
    } catch (const std::exception&) {
      if (!first) first = failure_status(r, 0);
    }
  }
  if (first) throw_failure(*first);
}

NodeRef load_npy_sharded(Session& s, const std::string& path, int ranks) {
  return load_raw_sharded(s, path, {read_npy_header(path)}, ranks)[0];
}

std::vector<NodeRef> load_raw_sharded(Session& s, const std::string& path, const std::vector<NpyHeader>& hs,
                                      int ranks, IoTask::Format format, const std::string& dataset) {
  std::vector<NodeRef> leaves;
  std::vector<IoTask> tasks;
  for (const NpyHeader& h : hs) {
    leaves.push_back(s.stored().new_leaf(h.shape, h.dtype));
    tasks.push_back(read_task(path, h, leaves.back(), ranks));
    tasks.back().format = format;
    tasks.back().dataset = dataset;
  }
  try {
    run_io(s, tasks, ranks);  // one job: every rank reads its part of every tensor
  } catch (...) {             // cleanup, then the same exception goes on (no Lua runs here)
    std::vector<uint64_t> keys;
    for (const IoTask& t : tasks) {
      s.shard_store().drop(t.key);
      keys.push_back(t.key);
    }
    if (on_mpi(s, ranks)) s.coordinator()->drop_on_workers(keys);
    throw;
  }
  for (size_t i = 0; i < leaves.size(); ++i) s.stored().register_stored(leaves[i], tasks[i].shards, ranks);
  if (on_mpi(s, ranks)) {  // a copy on each rank's buddy, so the loss of one rank loses none of it
    std::vector<uint64_t> keys;
    for (const IoTask& t : tasks) keys.push_back(t.key);
    s.coordinator()->replicate(keys);
  }
  return leaves;
}

NodeRef stored_leaf_of(Session& s, const NodeRef& x) {
  if (x->value) return nullptr;
  if (s.stored().layout(x->id)) return x;
  NodeRef leaf = s.stored().materialized_as(*x);
  return leaf && !leaf->value && s.stored().layout(leaf->id) ? leaf : nullptr;
}

void save_npy_sharded(Session& ses, const std::vector<std::pair<std::string, NodeRef>>& files) {
  // Grouped by the mesh each was stored on (normally one group: the current mesh).
  std::map<int, std::vector<IoTask>> groups;
  std::vector<std::pair<std::string, std::string>> renames;  // tmp -> path
  auto unlink_all = [&] {
    for (const auto& [tmp, path] : renames) ::unlink(tmp.c_str());
  };
  try {
    for (const auto& [path, leaf] : files) {
      const StoredLayout* s = ses.stored().layout(leaf->id);
      internal_check(s != nullptr);
      check_replaceable(path);
      const std::string tmp = cat_str(path, ".partial-", ::getpid());
      ::unlink(tmp.c_str());  // a temporary left by a crashed process with our pid
      renames.emplace_back(tmp, path);
      IoTask t;
      t.kind = IoTask::Write;
      t.path = tmp;
      t.key = leaf->id;
      try {
        t.header = write_npy_header(tmp, leaf->dtype, leaf->shape, true);
      } catch (const Error& e) {
        throw Error(rename_path(e.what(), tmp, path));
      }
      // A box held on several ranks (replicated) is written once.
      for (const plan::Shard& sh : s->shards) {
        bool dup = false;
        for (const plan::Shard& o : t.shards) dup = dup || o.box == sh.box;
        if (!dup && !(sh.box.rank() > 0 && sh.box.empty())) t.shards.push_back(sh);
      }
      groups[s->ranks].push_back(std::move(t));
    }
    for (const auto& [ranks, tasks] : groups) {
      try {
        run_io(ses, tasks, ranks);
      } catch (const InternalError&) {
        throw;
      } catch (const Error& e) {
        std::string msg = e.what();
        for (const auto& [tmp, path] : renames) msg = rename_path(msg, tmp, path);
        throw Error(msg);
      }
    }
  } catch (...) {  // cleanup, then the same exception goes on (no Lua runs here)
    unlink_all();
    throw;
  }
  for (const auto& [tmp, path] : renames)
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      unlink_all();
      throw Error(cat_str("'", path, "': cannot write: ", why));
    }
}

}  // namespace tapestry::io

namespace tapestry::io {

void save_parts_sharded(Session& ses, const std::string& path,
                        const std::function<std::vector<NpyHeader>(const std::string&)>& create,
                        const std::vector<NodeRef>& parts) {
  check_replaceable(path);
  const std::string tmp = cat_str(path, ".partial-", ::getpid());
  ::unlink(tmp.c_str());  // a temporary left by a crashed process with our pid
  try {
    const std::vector<NpyHeader> headers = create(tmp);
    internal_check(headers.size() == parts.size());
    std::map<int, std::vector<IoTask>> groups;  // by the mesh each leaf was stored on
    for (size_t i = 0; i < parts.size(); ++i) {
      const NpyHeader& h = headers[i];
      const NodeRef& node = parts[i];
      if (node->value) {
        write_npy_box(tmp, h, poly::Box::of_shape(h.shape), node->value->view());
        continue;
      }
      const StoredLayout* s = ses.stored().layout(node->id);
      internal_check(s != nullptr);
      IoTask t;
      t.kind = IoTask::Write;
      t.path = tmp;
      t.key = node->id;
      t.header = h;
      for (const plan::Shard& sh : s->shards) {  // a replicated box is written once
        bool dup = false;
        for (const plan::Shard& o : t.shards) dup = dup || o.box == sh.box;
        if (!dup && !(sh.box.rank() > 0 && sh.box.empty())) t.shards.push_back(sh);
      }
      groups[s->ranks].push_back(std::move(t));
    }
    for (const auto& [ranks, tasks] : groups) run_io(ses, tasks, ranks);
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(cat_str("'", path, "': cannot write: ", std::strerror(errno)));
  } catch (const InternalError&) {
    ::unlink(tmp.c_str());
    throw;
  } catch (const Error& e) {
    ::unlink(tmp.c_str());
    throw Error(naming(path, rename_path(e.what(), tmp, path)));
  } catch (...) {  // cleanup, then the same exception goes on (no Lua runs here)
    ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace tapestry::io
