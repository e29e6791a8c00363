// Checkpoints of the environment (checkpoint.hpp).
#include "engine/session/checkpoint.hpp"

#include "engine/session/observe.hpp"

#include <filesystem>
#include <memory>
#include <set>
#include <system_error>
#include <utility>

#include "engine/io/manifest.hpp"
#include "engine/io/npy.hpp"
#include "engine/io/parallel_io.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/planner.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/session.hpp"
#include "engine/session/sharded_io.hpp"

namespace tapestry::io {

namespace {

constexpr const char* kManifestName = "manifest.json";

std::string join(const std::string& dir, const std::string& file) {
  return (std::filesystem::path(dir) / file).string();
}

// A manifest comes from disk and may have been edited: its names must be identifiers and its
// files plain names inside the directory, never paths that climb out of it.
void check_entry(const std::string& manifest, const ManifestEntry& t) {
  user_check(is_identifier(t.name), "'", manifest, "': '", t.name, "' is not a valid tensor name");
  user_check(!t.file.empty() && t.file != "." && t.file != ".." && t.file.find('/') == std::string::npos &&
                 t.file.find('\0') == std::string::npos,
             "'", manifest, "': file '", t.file, "' of tensor '", t.name,
             "' is not a plain file name in the checkpoint directory");
}

}  // namespace

std::vector<std::string> save_env(Session& s, const std::string& dir) {
  materialize(s);
  const Environment& e = s.env();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  user_check(!ec, "'", dir, "': cannot create the checkpoint directory: ", ec.message());
  user_check(std::filesystem::is_directory(dir, ec), "'", dir, "': not a directory");

  Manifest m;
  std::vector<std::string> names;
  // A value kept sharded on the ranks (engine/store) is written by them, each its own boxes,
  // all in one I/O job; a value whole on rank 0 is written there.
  std::vector<std::pair<std::string, NodeRef>> sharded;
  for (const auto& [name, entry] : e.entries()) {
    const NodeRef& n = entry.stored;
    internal_check(n != nullptr);
    const std::string file = name + ".npy";
    if (!n->value && s.stored().layout(n->id)) {
      sharded.emplace_back(join(dir, file), n);
    } else {
      if (!n->value) observe_values(s, {n});
      save_npy(join(dir, file), n->value->view());
    }
    m.tensors.push_back({name, file, n->dtype, n->shape, numel(n->shape) * dtype_size(n->dtype)});
    names.push_back(name);
  }
  save_npy_sharded(s, sharded);  // every rank reported success before the manifest is written
  write_manifest(join(dir, kManifestName), m);
  return names;
}

std::vector<std::string> load_env(Session& s, const std::string& dir) {
  const std::string mpath = join(dir, kManifestName);
  const Manifest m = read_manifest(mpath);
  std::set<std::string> seen;
  for (const ManifestEntry& t : m.tensors) {
    check_entry(mpath, t);
    user_check(seen.insert(t.name).second, "'", mpath, "': tensor '", t.name, "' listed twice");
  }

  // Read everything before binding anything, so a bad file leaves the environment as it was.
  std::vector<std::pair<std::string, NodeRef>> loaded;
  // On N ranks each rank reads its own rows of every file into its shard store (one I/O job).
  const int ranks = s.mesh().ranks;
  std::vector<IoTask> tasks;
  for (const ManifestEntry& t : m.tensors) {
    const std::string path = join(dir, t.file);
    const NpyHeader h = read_npy_header(path);
    user_check(h.dtype == t.dtype && h.shape == t.shape, "'", path, "': holds ", dtype_name(h.dtype), " ",
               shape_str(h.shape), ", but the manifest says ", dtype_name(t.dtype), " ", shape_str(t.shape),
               " for '", t.name, "'");
    user_check(h.data_bytes() == t.bytes, "'", path, "': the manifest says ", t.bytes, " bytes for '", t.name,
               "', the header ", h.data_bytes());
    if (ranks > 1) {
      NodeRef leaf = make_stored_leaf(h.shape, h.dtype);
      tasks.push_back(read_task(path, h, leaf, ranks));
      loaded.emplace_back(t.name, std::move(leaf));
      continue;
    }
    auto value = Value::alloc(h.dtype, h.shape);
    read_npy_box(path, h, poly::Box::of_shape(h.shape), value->view());
    loaded.emplace_back(t.name, make_source(std::move(value), h.shape, h.dtype));
  }
  if (!tasks.empty()) {
    try {
      run_io(s, tasks, ranks);
    } catch (...) {  // cleanup, then the same exception goes on (no Lua runs here)
      std::vector<uint64_t> keys;
      for (const IoTask& t : tasks) s.shard_store().drop(t.key), keys.push_back(t.key);
      if (s.mpi_job_ranks() == ranks) s.coordinator()->drop_on_workers(keys);
      throw;
    }
    for (size_t i = 0; i < tasks.size(); ++i)
      s.stored().register_stored(loaded[i].second, tasks[i].shards, ranks);
  }
  std::vector<std::string> names;
  for (auto& [name, node] : loaded) {
    s.env().bind(name, std::move(node));
    names.push_back(name);
  }
  return names;
}

}  // namespace tapestry::io
