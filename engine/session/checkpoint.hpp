// Checkpoints of the environment: a directory of .npy files plus manifest.json.
//   save_env(session, "ckpt");                 // ckpt/w.npy, ckpt/b.npy, ckpt/manifest.json
//   std::vector<std::string> names = load_env(session, "ckpt");   // binds w and b again
// Files hold global shapes, not shards, so a checkpoint loads onto any number of ranks. On N
// ranks (engine/io/parallel_io.hpp) nothing passes through rank 0 but headers: a save has each
// rank write its stored boxes (write_npy_box) and writes the manifest only once every rank
// reported success; a load has each rank read its rows of each file (read_npy_box) into its
// shard store, and binds the names as stored tensors split along dimension 1.
// Crash safety: each .npy is written to a temporary and renamed, and the manifest, written
// last the same way, is what load_env trusts; a file that disagrees with it is an error.
#pragma once

#include <string>
#include <vector>

namespace tapestry {
class Session;
}

namespace tapestry::io {

// Computes the session's pending bindings, then writes every named tensor; returns the names
// written. Creates `dir` (and its parents) when missing. Files of names no longer bound are
// left alone; the manifest no longer lists them.
std::vector<std::string> save_env(Session& s, const std::string& dir);

// Reads every tensor the manifest lists, checking each file's header against it, then binds
// them all in the session (other names are kept). All or nothing: on any error, the
// environment is unchanged and the message names the file. Returns the names bound, in
// manifest order.
std::vector<std::string> load_env(Session& s, const std::string& dir);

}  // namespace tapestry::io
