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
#pragma once

#include <string>
#include <vector>

namespace tapestry {
class Session;
}

namespace tapestry::io {

// Computes the session's pending bindings, then writes every named tensor; returns the names
// written. Creates `dir` (and its parents) when missing; all or nothing (above).
std::vector<std::string> save_env(Session& s, const std::string& dir);

// Reads every tensor the manifest lists, checking each file's header against it, then binds
// them all in the session (other names are kept). All or nothing: on any error, the
// environment is unchanged and the message names the file. Returns the names bound, in
// manifest order.
std::vector<std::string> load_env(Session& s, const std::string& dir);

}  // namespace tapestry::io
