// Slices between the devices of different ranks, without passing through the host: NCCL's
// send/recv on GPUs (in the CUDA plugin), or a simulation of its rules for the tests.
//   std::unique_ptr<DevicePeers> p = dev.join_peers(id, rank, size);   // once per MPI job
//   auto s = p->send(1, slice);   auto r = p->recv(0, buffer);   while (!r->test()) { other work }
// NCCL's rules, which every implementation keeps (the simulations check them):
// - operations between two ranks are matched by the order they are posted in, not by a tag;
// - a rank's operations run in the order it posts them, each waiting for the one before;
// - a send completes only once its receiver has posted the matching receive (no buffering).
// So every rank must post its sends and receives in one global order: the executor posts its
// transfers in the plan's transfer order (engine/shard/rank_program.cpp), which matches each
// pair and cannot deadlock, since that order is a topological order of the plan (docs/gpu.md).
// Handles are comm::Collective: test() never blocks; a handle destroyed before it completes
// (a failed run) keeps its buffers alive until the device is done with them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/comm/collective.hpp"
#include "engine/device/backend.hpp"

namespace tapestry::comm {

class DevicePeers {
 public:
  virtual ~DevicePeers() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "nccl", "simulated over MPI", ...
  // `src` / `dst`: contiguous views of this rank's device memory, the same shape and dtype on
  // both sides. `src` must not change, nor `dst` be read, until test() says the transfer is done.
  // `label` names the transfer (the plan's index): NCCL ignores it, the simulations check that
  // both ends agree, so a wrong order of posting fails there instead of mixing up data.
  virtual std::unique_ptr<Collective> send(int to, const DeviceView& src, uint64_t label) = 0;
  virtual std::unique_ptr<Collective> recv(int from, const DeviceView& dst, uint64_t label) = 0;
  // Operations posted (tests, tp.stats()) and bytes sent.
  virtual int64_t sends() const = 0;
  virtual int64_t bytes_sent() const = 0;
};

}  // namespace tapestry::comm
