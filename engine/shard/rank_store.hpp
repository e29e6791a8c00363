// One rank's data while it runs a plan: the pieces of each tensor it holds (initial shards,
// received slices, block outputs, combined values), each in host memory, device memory, or both.
//   RankStore s(rank, dev, describe);                 // dev == nullptr: a CPU-only rank
//   s.hold(id, box, host_view);  s.hold(id, box, device_view);
//   View h = s.host(id, need);          // a window, or assembled; device parts are downloaded
//   DeviceView d = s.device(id, need);  // a window, or assembled; host data uploaded once
// Copies between host and device happen only here, and only when a reader on the other side
// needs the data: a slice sent over MPI or read by a CPU block is downloaded (just that
// slice); the part of a host piece a device block reads is uploaded once and kept there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/device/backend.hpp"
#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"
#include "engine/poly/view_window.hpp"

namespace tapestry {

class RankStore {
 public:
  // describe(tensor) names a tensor in errors, e.g. "%12 (matmul)".
  RankStore(int rank, DeviceBackend* dev, std::function<std::string(uint64_t)> describe)
      : rank_(rank), dev_(dev), describe_(std::move(describe)) {}

  void hold(uint64_t tensor, poly::Box box, View v);
  void hold(uint64_t tensor, poly::Box box, DeviceView v);
  // Forgets every piece of `tensor` (no later step reads it): its memory goes with the last view.
  void drop(uint64_t tensor) { store_.erase(tensor); }
  // Forgets the pieces of `tensor` whose box is `box` (no later step reads them).
  void drop(uint64_t tensor, const poly::Box& box);

  // The slice `need` (an empty box: an empty View) as host data. Throws InternalError naming
  // the rank and the part it lacks when its pieces do not cover `need`.
  View host(uint64_t tensor, const poly::Box& need);
  // The slice `need` in device memory (requires a device).
  DeviceView device(uint64_t tensor, const poly::Box& need);
  // Whether one piece covers `need` in device memory already.
  bool on_device(uint64_t tensor, const poly::Box& need) const;

  // Host <-> device traffic of this store (bytes), for tp.stats().
  int64_t uploaded() const { return uploaded_; }
  int64_t downloaded() const { return downloaded_; }

 private:
  struct Piece {
    poly::Box box;
    View host;       // buf == nullptr: not on the host
    DeviceView dev;  // mem == nullptr: not on the device
  };
  std::vector<Piece>& pieces(uint64_t tensor);
  void check_covered(uint64_t tensor, const poly::Box& need, const std::vector<Piece>& ps) const;
  const DeviceView& on_device(Piece& p);  // uploads a host piece, once
  View download(const DeviceView& d);

  int rank_;
  DeviceBackend* dev_;
  std::function<std::string(uint64_t)> describe_;
  std::unordered_map<uint64_t, std::vector<Piece>> store_;
  int64_t uploaded_ = 0, downloaded_ = 0;
};

}  // namespace tapestry
