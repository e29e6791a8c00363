// Parallel .npy I/O of sharded tensors, orchestrated: every rank reads or writes only its own
// boxes (engine/io/parallel_io.hpp has the per-rank part and the Io job's encoding).
#include "engine/session/sharded_io.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include <fcntl.h>

#include <filesystem>

#include "engine/dist/worker.hpp"
#include "engine/io/chunk_grid.hpp"
#include "engine/io/csv.hpp"
#include "engine/io/write_file.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/session/observe.hpp"
#include "engine/session/recovery.hpp"
#include "engine/session/session.hpp"
#include "engine/telemetry/progress.hpp"

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
    // A job lost and replaced on as many ranks runs the job again; on fewer, its tasks are void.
    with_recovery(s, [&] {
      user_check(on_mpi(s, ranks), "the MPI job was replaced by one of ", s.mpi_job_ranks(),
                 " ranks during this read or write; run it again");
      s.coordinator()->run_io(encode_io(tasks), [&] { run_io_part(tasks, 0, s.shard_store(), fail_rank); });
    });
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
    replicate_recovering(s, keys);
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
  Progress bar(0);
  for (const auto& [path, leaf] : files) {
    const StoredLayout* l = ses.stored().layout(leaf->id);
    bar.add_io_total(io_share(ses, numel(leaf->shape) * dtype_size(leaf->dtype), l ? l->ranks : 1));
  }
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
        // One file: the message names it (a rank's failure may not); several (a checkpoint's):
        // each rank's own message says which.
        throw Error(files.size() == 1 ? naming(files[0].first, msg) : msg);
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
                        const std::vector<NodeRef>& parts, IoTask::Format format,
                        const std::string& dataset) {
  check_replaceable(path);
  int64_t total = 0;
  for (const NodeRef& n : parts) {
    const StoredLayout* l = ses.stored().layout(n->id);
    total += io_share(ses, numel(n->shape) * dtype_size(n->dtype), l ? l->ranks : 1);
  }
  Progress bar(0);
  bar.add_io_total(total);
  const std::string tmp = cat_str(path, ".partial-", ::getpid());
  ::unlink(tmp.c_str());  // a temporary left by a crashed process with our pid
  try {
    const std::vector<NpyHeader> headers = create(tmp);
    internal_check(headers.size() == parts.size());
    std::map<int, std::vector<IoTask>> groups;  // by the mesh each leaf was stored on
    for (size_t i = 0; i < parts.size(); ++i) {
      const NpyHeader& h = headers[i];
      const NodeRef& node = parts[i];
      IoTask t;
      t.kind = IoTask::Write;
      t.format = format;
      t.dataset = dataset;
      t.path = tmp;
      t.key = node->id;
      t.header = h;
      const StoredLayout* s = ses.stored().layout(node->id);
      if (!s) {
        internal_check(node->value != nullptr);
        write_box(t, poly::Box::of_shape(h.shape), node->value->view());
        continue;
      }
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

namespace tapestry::io {

namespace {

// The distinct boxes of a stored layout (a replicated box once), with their ranks.
std::vector<plan::Shard> distinct_shards(const StoredLayout& l) {
  std::vector<plan::Shard> out;
  for (const plan::Shard& sh : l.shards) {
    bool dup = false;
    for (const plan::Shard& o : out) dup = dup || o.box == sh.box;
    if (!dup && !(sh.box.rank() > 0 && sh.box.empty())) out.push_back(sh);
  }
  return out;
}

// The window of `v` (holding box `outer`) that holds `inner`.
View window_of(const View& v, const poly::Box& outer, const poly::Box& inner) {
  View w = v;
  for (int d = 0; d < inner.rank(); ++d) {
    w.offset += (inner.lo[d] - outer.lo[d]) * v.strides[d];
    w.shape[d] = inner.extent(d);
  }
  return w;
}

// Rows split into blocks of whole rows, in order, covering every row once: each can be
// formatted and placed by its rank. Sorted by first row.
std::optional<std::vector<plan::Shard>> row_blocks(const StoredLayout& l, const Shape& shape) {
  std::vector<plan::Shard> b = distinct_shards(l);
  std::sort(b.begin(), b.end(),
            [](const plan::Shard& a, const plan::Shard& c) { return a.box.lo[0] < c.box.lo[0]; });
  int64_t next = 0;
  for (const plan::Shard& sh : b) {
    if (sh.box.lo[0] != next) return std::nullopt;
    if (shape.size() == 2 && (sh.box.lo[1] != 0 || sh.box.hi[1] != shape[1] - 1)) return std::nullopt;
    next = sh.box.hi[0] + 1;
  }
  if (next != shape[0]) return std::nullopt;
  return b;
}

}  // namespace

int64_t io_share(Session& s, int64_t bytes, int ranks) { return on_mpi(s, ranks) ? bytes / ranks : bytes; }

void save_zarr_sharded(Session& s, const std::string& path, const NodeRef& x, const ZarrMeta& m) {
  const StoredLayout* l = s.stored().layout(x->id);
  internal_check(l != nullptr);
  const int ranks = l->ranks;
  check_zarr_dtype(path, x->dtype);
  const bool exists = check_zarr_replaceable(path);
  const std::string tmp = cat_str(path, ".partial-", ::getpid());
  // Every holder of a box (a replicated tensor's ranks take turns at its chunks).
  std::vector<plan::Shard> holders;
  for (const plan::Shard& sh : l->shards)
    if (!(sh.box.rank() > 0 && sh.box.empty())) holders.push_back(sh);
  const ChunkWriters w = chunk_writers(x->shape, m.chunks, holders);
  Progress bar(0);
  bar.add_io_total(io_share(s, numel(x->shape) * dtype_size(x->dtype), ranks));
  std::error_code ec;
  try {
    create_zarr(tmp, m);
    if (!w.shared.empty()) {
      // Chunks no rank holds whole: their boxes gathered here, in as few pieces as rows allow.
      const std::vector<poly::Box> boxes = merge_boxes(w.shared);
      std::vector<NodeRef> pieces;
      for (const poly::Box& b : boxes)
        pieces.push_back(build::slice(x, b.lo, std::vector<int64_t>(b.lo.size(), 1), b.extents()));
      observe_values(s, pieces);
      for (const poly::Box& c : w.shared)
        for (size_t i = 0; i < boxes.size(); ++i)
          if (boxes[i].contains(c)) {
            write_zarr_chunk(tmp, m, c, window_of(pieces[i]->value->view(), boxes[i], c));
            break;
          }
    }
    IoTask t;
    t.kind = IoTask::Write;
    t.format = IoTask::Zarr;
    t.path = tmp;
    t.key = x->id;
    t.header.dtype = x->dtype;
    t.header.shape = x->shape;
    t.shards = w.owned;
    run_io(s, {t}, ranks);
    commit_zarr(tmp, path, exists);
  } catch (const InternalError&) {
    std::filesystem::remove_all(tmp, ec);
    throw;
  } catch (const Error& e) {
    std::filesystem::remove_all(tmp, ec);
    throw Error(naming(path, rename_path(e.what(), tmp, path)));
  }
}

void save_csv_sharded(Session& s, const std::string& path, const NodeRef& x0, char delimiter,
                      const std::vector<std::string>& names) {
  check_replaceable(path);
  NodeRef x = x0;
  const StoredLayout* l = s.stored().layout(x->id);
  internal_check(l != nullptr);
  std::optional<std::vector<plan::Shard>> blocks = row_blocks(*l, x->shape);
  if (!blocks) {  // e.g. split by columns: stored again as blocks of rows
    std::vector<int64_t> parts(x->shape.size(), 1);
    parts[0] = std::min<int64_t>(x->shape[0], s.mesh().ranks);
    x = observe_stored(s, {build::constrain(x, parts)})[0];
    l = s.stored().layout(x->id);
    if (l) blocks = row_blocks(*l, x->shape);
    if (!blocks) {  // one process holds it after all: it writes the whole file
      observe_values(s, {x});
      return write_csv(path, x->value->view(), delimiter, names);
    }
  }
  const int ranks = l->ranks;
  const std::string tmp = cat_str(path, ".partial-", ::getpid());
  ::unlink(tmp.c_str());  // a temporary left by a crashed process with our pid
  Progress bar(0);
  bar.add_io_total(io_share(s, numel(x->shape) * dtype_size(x->dtype), ranks));
  // Step 1: each rank formats its rows; their lengths come back as a stored {blocks} tensor.
  const NodeRef lengths = s.stored().new_leaf({static_cast<int64_t>(blocks->size())}, DType::I64);
  IoTask t;
  t.kind = IoTask::Write;
  t.format = IoTask::Csv;
  t.path = tmp;
  t.key = x->id;
  t.header.dtype = x->dtype;
  t.header.shape = x->shape;
  t.shards = *blocks;
  t.delimiter = delimiter;
  t.aux_key = lengths->id;
  std::vector<plan::Shard> length_shards;
  for (size_t i = 0; i < blocks->size(); ++i) {
    const auto k = static_cast<int64_t>(i);
    length_shards.push_back(plan::Shard{lengths->id, poly::Box({k}, {k}), (*blocks)[i].rank});
  }
  auto forget = [&] {  // the texts and lengths the ranks keep, after a failure
    IoTask d = t;
    d.step = IoTask::Discard;
    try {
      run_io(s, {d}, ranks);
    } catch (const Error&) {  // the failure being reported matters more than this cleanup's
    }
    s.shard_store().drop(lengths->id);
    if (on_mpi(s, ranks)) s.coordinator()->drop_on_workers({lengths->id});
  };
  bool kept = true;  // the ranks may hold texts of this save
  try {
    t.step = IoTask::Render;
    run_io(s, {t}, ranks);
    s.stored().register_stored(lengths, length_shards, ranks);
    observe_values(s, {lengths});
    // Step 2: the offsets, an exclusive prefix sum after the header; the file sized for all.
    const std::string head = csv_header_line(names, delimiter);
    int64_t at = static_cast<int64_t>(head.size());
    for (size_t i = 0; i < blocks->size(); ++i) {
      t.offsets.push_back(at);
      at += lengths->value->view().ptr<int64_t>()[i];
    }
    {
      const WriteFile f(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, "for writing");
      f.write_at(head.data(), head.size(), 0, false);
      f.resize(at);
    }
    stats().bytes_written += head.size();
    t.step = IoTask::Place;
    run_io(s, {t}, ranks);
    kept = false;
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(cat_str("'", path, "': cannot write: ", std::strerror(errno)));
  } catch (const InternalError&) {
    if (kept) forget();
    ::unlink(tmp.c_str());
    throw;
  } catch (const Error& e) {
    if (kept) forget();
    ::unlink(tmp.c_str());
    throw Error(naming(path, rename_path(e.what(), tmp, path)));
  }
}

}  // namespace tapestry::io
