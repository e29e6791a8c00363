// Checkpoints of the environment (checkpoint.hpp).
#include "engine/session/checkpoint.hpp"

#include "engine/session/observe.hpp"
#include "engine/session/recovery.hpp"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <system_error>
#include <utility>

#include "engine/io/manifest.hpp"
#include "engine/io/npy.hpp"
#include "engine/io/parallel_io.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/packed.hpp"
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

constexpr const char* kFolderPrefix = "v-";

bool plain_name(const std::string& f) {
  return !f.empty() && f != "." && f != ".." && f.find('/') == std::string::npos &&
         f.find('\0') == std::string::npos;
}

// A manifest comes from disk and may have been edited: its names must be identifiers and its
// files plain names inside the directory or one folder below it, never paths that climb out.
void check_entry(const std::string& manifest, const ManifestEntry& t) {
  user_check(is_identifier(t.name), "'", manifest, "': ", quoted(t.name), " is not a valid tensor name");
  const size_t slash = t.file.find('/');
  const bool ok = slash == std::string::npos
                      ? plain_name(t.file)
                      : plain_name(t.file.substr(0, slash)) && plain_name(t.file.substr(slash + 1));
  user_check(ok, "'", manifest, "': file ", quoted(t.file), " of tensor '", t.name,
             "' is not a plain file name in the checkpoint directory (or one folder below it)");
}

// A new folder for one checkpoint's files: "v-" and 16 random hex digits.
std::string fresh_folder(const std::string& dir) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    uint64_t r = 0;
    if (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r))
      r = static_cast<uint64_t>(::getpid()) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(::time(nullptr)) +
          static_cast<uint64_t>(attempt);
    char name[32];
    std::snprintf(name, sizeof name, "%s%016llx", kFolderPrefix, static_cast<unsigned long long>(r));
    const std::string path = join(dir, name);
    if (::mkdir(path.c_str(), 0755) == 0) return name;
    user_check(errno == EEXIST, "'", path, "': cannot create the checkpoint folder: ", std::strerror(errno));
  }
  user_error("'", dir, "': cannot find a free name for the checkpoint folder");
}

// The folders (ours, "v-...") and top-level files the manifest at `mpath` lists, if it reads.
void previous_files(const std::string& mpath, std::set<std::string>& folders, std::set<std::string>& files) {
  std::error_code ec;
  if (!std::filesystem::exists(mpath, ec)) return;
  try {
    for (const ManifestEntry& t : read_manifest(mpath).tensors) {
      check_entry(mpath, t);
      const size_t slash = t.file.find('/');
      if (slash == std::string::npos) files.insert(t.file);
      else if (t.file.starts_with(kFolderPrefix)) folders.insert(t.file.substr(0, slash));
    }
  } catch (const Error&) {  // an unreadable old manifest: its files are left alone
    folders.clear();
    files.clear();
  }
}

// The directories create_directories(dir) would make, deepest first.
std::vector<std::filesystem::path> missing_dirs(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (std::filesystem::path p = dir; !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    out.push_back(p);
    if (p == p.parent_path()) break;
  }
  return out;
}

// Removes the new folder and the directories this save made (each only while empty).
void undo(const std::string& dir, const std::string& folder,
          const std::vector<std::filesystem::path>& created) {
  std::error_code ec;
  if (!folder.empty()) std::filesystem::remove_all(join(dir, folder), ec);
  for (const auto& d : created) std::filesystem::remove(d, ec);
}

}  // namespace

std::vector<std::string> save_env(Session& s, const std::string& dir, std::vector<SavedFile>* saved) {
  materialize(s);
  const Environment& e = s.env();
  const std::string mpath = join(dir, kManifestName);
  const auto created = missing_dirs(std::filesystem::path(dir).lexically_normal());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  user_check(!ec, "'", dir, "': cannot create the checkpoint directory: ", ec.message());
  user_check(std::filesystem::is_directory(dir, ec), "'", dir, "': not a directory");

  // Everything goes into a fresh folder and the manifest's rename commits it: until then the
  // previous checkpoint is untouched, and on any failure the folder (and any directory this
  // call made) is removed again.
  std::string folder;
  Manifest m;
  std::vector<std::string> names;
  std::set<std::string> old_folders, old_files;
  try {
    folder = fresh_folder(dir);
    // A value kept sharded on the ranks (engine/store) is written by them, each its own boxes,
    // all in one I/O job; a value whole on rank 0 is written there.
    std::vector<std::pair<std::string, NodeRef>> sharded;
    for (const auto& [name, entry] : e.entries()) {
      // A declared tensor kept packed (docs/properties.md) is saved dense, as it reads.
      const NodeRef n = entry.declared.packed.empty()
                            ? entry.stored
                            : build::dense(build::read_form(entry.stored, entry.declared));
      internal_check(n != nullptr);
      const std::string file = folder + "/" + name + ".npy";
      if (!n->value && s.stored().layout(n->id)) {
        sharded.emplace_back(join(dir, file), n);
      } else {
        if (!n->value) observe_values(s, {n});
        save_npy(join(dir, file), n->value->view());
      }
      PropertiesAttrs declared = entry.declared;  // kept in the manifest, loaded declared again
      declared.packed.clear();
      m.tensors.push_back({name, file, n->dtype, n->shape, numel(n->shape) * dtype_size(n->dtype), declared});
      names.push_back(name);
      if (saved) saved->push_back({name, n->id, join(dir, file)});
    }
    save_npy_sharded(s, sharded);  // every rank reported success before the manifest is written
    previous_files(mpath, old_folders, old_files);
    write_manifest(mpath, m);  // the commit
  } catch (...) {              // cleanup, then the same exception goes on (no Lua runs here)
    undo(dir, folder, created);
    throw;
  }
  // The previous checkpoint's files are garbage now; failing to remove them changes nothing.
  for (const std::string& f : old_folders)
    if (f != folder) std::filesystem::remove_all(join(dir, f), ec);
  for (const std::string& f : old_files) std::filesystem::remove(join(dir, f), ec);
  return names;
}

std::vector<std::string> load_env(Session& s, const std::string& dir) {
  const std::string mpath = join(dir, kManifestName);
  const Manifest m = read_manifest(mpath);
  std::set<std::string> seen;
  for (const ManifestEntry& t : m.tensors) {
    check_entry(mpath, t);
    user_check(seen.insert(t.name).second, "'", mpath, "': tensor '", t.name, "' listed twice");
    if (!t.properties.empty()) {
      try {
        PropertiesAttrs p = t.properties;
        build::check_groups(t.shape, p.groups, t.dtype);
        if (!p.tiles.empty()) build::check_tiles(t.shape, p.tiles, p.nonzero);
      } catch (const Error& e) {
        user_error("'", mpath, "': the properties of '", t.name, "' do not fit its ", dtype_name(t.dtype),
                   " ", shape_str(t.shape), ": ", e.what());
      }
    }
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
      NodeRef leaf = s.stored().new_leaf(h.shape, h.dtype);
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
    std::vector<uint64_t> keys;
    for (size_t i = 0; i < tasks.size(); ++i) {
      s.stored().register_stored(loaded[i].second, tasks[i].shards, ranks);
      keys.push_back(tasks[i].key);
    }
    if (s.mpi_job_ranks() == ranks) replicate_recovering(s, keys);  // copies on each rank's buddy
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < loaded.size(); ++i) {
    auto& [name, node] = loaded[i];
    // Declared again, trusted (they held when saved), and so kept packed as before the save.
    const PropertiesAttrs& p = m.tensors[i].properties;
    if (!p.empty()) node = build::stored_form(build::declare(node, p, true));
    s.env().bind(name, std::move(node));
    names.push_back(name);
  }
  return names;
}

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::vector<std::string> checkpoint(Session& s, const std::string& given) {
  const std::string dir = given.empty() ? s.config().checkpoint_dir : given;
  user_check(!dir.empty(),
             "no checkpoint directory: give one (tp.checkpoint(dir)) or start with --checkpoint-dir DIR");
  CheckpointRecord& rec = s.last_checkpoint();
  // Set while the files are written, cleared however save_env ends (an error leaves the last
  // record as it was).
  struct Writing {
    bool& flag;
    explicit Writing(bool& f) : flag(f) { flag = true; }
    ~Writing() { flag = false; }
  };
  std::vector<SavedFile> saved;
  std::vector<std::string> names;
  {
    const Writing writing(rec.writing);
    names = save_env(s, dir, &saved);
  }
  rec = CheckpointRecord{dir, now_s(), {}, false};
  for (const SavedFile& f : saved) rec.files[f.node] = f.path;
  return names;
}

void maybe_checkpoint(Session& s) {
  const double every_s = s.config().checkpoint_every_min * 60;
  CheckpointRecord& rec = s.last_checkpoint();
  if (every_s <= 0 || s.config().checkpoint_dir.empty() || rec.writing) return;
  const double now = now_s();
  if (rec.saved_at == 0) rec.saved_at = now;  // the first interval starts with the session's work
  if (now - rec.saved_at < every_s) return;
  checkpoint(s, s.config().checkpoint_dir);
}

bool restore_from_checkpoint(Session& s, const NodeRef& leaf) {
  const std::string path = s.last_checkpoint().file_of(leaf->id);
  if (path.empty()) return false;
  const NpyHeader h = read_npy_header(path);
  user_check(h.dtype == leaf->dtype && h.shape == leaf->shape, "'", path, "': holds ", dtype_name(h.dtype),
             " ", shape_str(h.shape), ", not the ", dtype_name(leaf->dtype), " ", shape_str(leaf->shape),
             " the checkpoint wrote");
  const int ranks = s.mesh().ranks;
  internal_check(ranks > 1);
  const IoTask task = read_task(path, h, leaf, ranks);
  run_io(s, {task}, ranks);
  s.stored().register_stored(leaf, task.shards, ranks);
  return true;
}

}  // namespace tapestry::io
