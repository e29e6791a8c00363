// The shard store: the pieces of stored (named) tensors that this process holds, per rank.
//   store.put(rank, key, box, view);              // a result shard kept where computed
//   std::optional<View> v = store.find(rank, key, box);   // a later plan's initial shard
//   store.drop(key);                              // a rebind or drop frees the old version
//   store.put(rank, key, box, device_view, dev);  // a shard computed on a GPU stays there
// Each session has one (engine/session/session.hpp). A key is rank 0's node id of the stored
// tensor's leaf (engine/store/stored_tensor.hpp), so every version has its own key and a
// rebind never overwrites the pieces readers still use. Under MPI each process holds its own
// rank; over loopback this process holds every rank. A shard computed on a device is kept in
// device memory: the next plan's blocks read it there, and a host reader (tp.save, a CPU
// block) gets a downloaded copy. Under memory pressure (engine/session/spill.hpp) the coldest
// host pieces nobody is reading are written to files and freed (spill_coldest); a later find
// reads such a piece back.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/device/backend.hpp"
#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"

namespace tapestry {

class ShardStore {
 public:
  // Keeps `v` (the data of `box` of the tensor) on `rank`. A window on a larger buffer is
  // copied out, so a kept shard never pins the block output it came from.
  void put(int rank, uint64_t key, const poly::Box& box, const View& v);
  // Keeps `v` in the memory of `dev` (copied into an allocation of its own when it is a
  // window); `dev` must outlive the piece (the session's device does: it is destroyed after
  // the store, and the device runtime's exit handlers run later still).
  void put(int rank, uint64_t key, const poly::Box& box, const DeviceView& v, DeviceBackend& dev);

  // One kept piece's view of `box`: in host memory (host.buf set) or on a device (dev.mem set).
  struct Found {
    View host;
    DeviceView dev;
  };
  // The piece on `rank` that covers `box`, as a window; nullopt when none does.
  std::optional<Found> find_piece(int rank, uint64_t key, const poly::Box& box) const;
  // `box` on the host: a window, or a downloaded copy of a device piece; nullopt otherwise.
  std::optional<View> find(int rank, uint64_t key, const poly::Box& box) const;
  void drop(uint64_t key);                      // every rank's pieces of it
  int64_t bytes(int rank, uint64_t key) const;  // payload of its pieces on `rank`
  int64_t total_bytes() const;                  // everything this process keeps
  bool has(uint64_t key) const;
  int64_t device_bytes() const;  // of it, in device memory

  // Every (key, rank) this process holds pieces of: its own rank's and, under MPI, the
  // replicas it keeps for its buddy (engine/store/shard_file.hpp), sorted.
  std::vector<std::pair<uint64_t, int>> holdings() const;
  // The pieces of (key, rank) on the host: each box with a window on it, or a downloaded copy.
  std::vector<std::pair<poly::Box, View>> pieces(uint64_t key, int rank) const;

  // Writes the least recently used host pieces that nothing else refers to (no plan holds a
  // window on them) into `dir`, one file each, and frees them, until `need` bytes are freed or
  // none is left; the bytes freed. A piece whose file cannot be written stays in memory and the
  // Error names it (`what(key)` names a key: "tp.env.w", "%12").
  int64_t spill_coldest(int64_t need, const std::string& dir, bool fail_writes,
                        const std::function<std::string(uint64_t)>& what);
  int64_t spills() const { return spills_; }            // pieces written out, in all
  int64_t spill_bytes() const { return spill_bytes_; }  // their bytes, in all
  int64_t readbacks() const { return readbacks_; }      // pieces read back, in all
  ~ShardStore();                                        // removes the spill files

 private:
  struct Piece {
    poly::Box box;
    View view;       // host, or the device data's layout (buf null)
    DeviceView dev;  // mem set: in device memory
    DeviceBackend* backend = nullptr;
    std::string file;       // spilled: its data is in this file (view.buf null)
    uint64_t last_use = 0;  // tick of the last put or find
    // Read back from `file`, which is kept: pieces never change, so spilling it again only
    // frees the memory (an out-of-core step reads its input's bands back, then lets them go).
    std::string copy;
  };
  const Piece* covering(int rank, uint64_t key, const poly::Box& box) const;  // under mu_
  // The piece covering `box`, read back from its file first when it was spilled.
  const Piece* resident(int rank, uint64_t key, const poly::Box& box,
                        std::unique_lock<std::mutex>& lock) const;
  mutable std::mutex mu_;
  mutable std::map<std::pair<uint64_t, int>, std::vector<Piece>> pieces_;  // (key, rank)
  mutable uint64_t tick_ = 0;
  mutable int64_t spills_ = 0, spill_bytes_ = 0, readbacks_ = 0;
};

}  // namespace tapestry
