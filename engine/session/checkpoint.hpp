// Checkpoints of the environment: a directory holding manifest.json and a folder of .npy files.
//   save_env(session, "ckpt");      // ckpt/v-<16 hex>/w.npy, .../b.npy, then ckpt/manifest.json
//   std::vector<std::string> names = load_env(session, "ckpt");   // binds w and b again
// Files hold global shapes, not shards, so a checkpoint loads onto any number of ranks. On N
// ranks (engine/io/parallel_io.hpp) nothing passes through rank 0 but headers: a save has each
// rank write its stored boxes (write_npy_box) and writes the manifest only once every rank
// reported success; a load has each rank read its rows of each file (read_npy_box) into its
// shard store, and binds the names as stored tensors split along dimension 1.
// Saves cannot tear: each save writes into a fresh folder, and renaming the manifest over the
// old one is the single step that commits it. A failure at any point before it removes the
// folder (and any directory the save created), leaving the previous checkpoint whole; after
// it, the previous checkpoint's files are removed. load_env trusts only the manifest, and a
// file that disagrees with it is an error. (A process killed mid-save leaves an unreferenced
// v-* folder, which no load reads.)
// The automatic checkpoint (issue 23) is such a checkpoint, written into --checkpoint-dir every
// --checkpoint-every minutes (at the first observation past the interval) or on demand
// (tp.checkpoint()); the session remembers which stored tensor each of its files holds, so a
// tensor lost with its MPI job can be read back from it (engine/session/recovery.hpp).
//   std::vector<std::string> names = checkpoint(session, "");   // into --checkpoint-dir
//   std::string file = session.last_checkpoint().file_of(leaf->id);   // "" when not in it
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry {
class Session;

// The last automatic checkpoint this session wrote: which file holds which stored tensor.
struct CheckpointRecord {
  std::string dir;
  double saved_at = 0;                              // steady-clock seconds
  std::unordered_map<uint64_t, std::string> files;  // stored leaf id -> its .npy file
  bool writing = false;                             // a checkpoint is being written now
  std::string file_of(uint64_t leaf) const {
    auto it = files.find(leaf);
    return it == files.end() ? std::string() : it->second;
  }
};
}  // namespace tapestry

namespace tapestry::io {

// One tensor a save wrote: the stored leaf (or value-holding node) and its file.
struct SavedFile {
  std::string name;
  uint64_t node = 0;
  std::string path;
};

// Computes the session's pending bindings, then writes every named tensor; returns the names
// written. Creates `dir` (and its parents) when missing; all or nothing (above). `saved`, when
// given, receives each tensor's node and file.
std::vector<std::string> save_env(Session& s, const std::string& dir,
                                  std::vector<SavedFile>* saved = nullptr);

// tp.checkpoint([dir]): save_env into `dir` (or the session's --checkpoint-dir when empty;
// an Error when neither is given), remembered as the session's last checkpoint.
std::vector<std::string> checkpoint(Session& s, const std::string& dir);
// Called after every observation's pending bindings are computed: writes the automatic
// checkpoint when --checkpoint-every minutes have passed since the last one.
void maybe_checkpoint(Session& s);
// Reads the stored tensor `leaf` back from the last checkpoint into its key, on the session's
// mesh (each rank its rows, as load_env); false when the checkpoint does not hold it.
bool restore_from_checkpoint(Session& s, const NodeRef& leaf);

// Reads every tensor the manifest lists, checking each file's header against it, then binds
// them all in the session (other names are kept). All or nothing: on any error, the
// environment is unchanged and the message names the file. Returns the names bound, in
// manifest order.
std::vector<std::string> load_env(Session& s, const std::string& dir);

}  // namespace tapestry::io
