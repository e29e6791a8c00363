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
// Exchanges (plan::Exchange: a broadcast, all-gather or all-to-all among a group) run as one
// grouped collective where an implementation has them (has_exchanges): NCCL's ncclBroadcast /
// ncclAllGather / paired ncclSend and ncclRecv inside one ncclGroupStart/End on a communicator
// of the group's members, created on first use and cached. A collective takes its place in
// the same one order as the transfers (each member posts it where the plan places it,
// plan::Exchange::after), and completes only when every member has reached it.
// Partial sums (a plan's combines run as collectives, comm::ReduceSpec) merge between the
// devices likewise where an implementation has them (can_reduce): ncclAllReduce / ncclReduce /
// ncclReduceScatter (one ncclReduce per member inside one group when the pieces differ in
// size) on the members' communicator, placed in the same one order (plan::Combine::after).
// Handles are comm::Collective: test() never blocks; a handle destroyed before it completes
// (a failed run) keeps its buffers alive until the device is done with them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/comm/collective.hpp"
#include "engine/device/backend.hpp"
#include "kernels/monoid.hpp"

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
  // Whether exchange() is offered (the same answer on every rank of a job).
  virtual bool has_exchanges() const { return false; }
  // One exchange among spec.group (this rank a member), counts in bytes as comm::ExchangeSpec
  // lays them out: `in` holds what this rank contributes, `out` receives what it gets (both
  // contiguous device memory of at least those bytes, any dtype). `label` names it (the
  // simulations check that every member posted the same one at the same place).
  virtual std::unique_ptr<Collective> exchange(const ExchangeSpec& spec, const DeviceView& in,
                                               const DeviceView& out, uint64_t label);
  // Whether reduce() merges values of `dtype` with `op` (the same answer on every rank of a job;
  // at most what peers_can_merge allows).
  virtual bool can_reduce(Monoid /*op*/, DType /*dtype*/) const { return false; }
  // One reduce (spec.root a rank), all-reduce (kAllMembers) or reduce-scatter (spec.counts)
  // among spec.group (this rank a member), in elements of in's dtype as comm::ReduceSpec lays
  // them out: `in` holds this rank's contribution (a reduce-scatter's: every member's run, in
  // group order), `out` receives the merge (or this member's run of it) on the receiving
  // members and is ignored elsewhere; both contiguous device memory. Members merge in group
  // order, so every copy of an all-reduce is the same value. `label` as for exchange().
  virtual std::unique_ptr<Collective> reduce(const ReduceSpec& spec, const DeviceView& in,
                                             const DeviceView& out, uint64_t label);
  // Operations posted (tests, tp.stats()) and bytes sent.
  virtual int64_t sends() const = 0;
  virtual int64_t bytes_sent() const = 0;
};

// The merges device peers may offer: those NCCL computes as the kernels do (kernels/monoid.hpp).
// Sums and products of integers and of f32/f64, max and min of integers (NCCL's float max and
// min need not propagate NaN), and every merge of bools (max or min of their bytes). The rest
// (f16, bf16, complex, float max/min) merge on the host.
constexpr bool peers_can_merge(Monoid op, DType t) {
  switch (t) {
    case DType::Bool: return true;
    case DType::I8:
    case DType::U8:
    case DType::I32:
    case DType::I64: return op == Monoid::Sum || op == Monoid::Prod || op == Monoid::Max || op == Monoid::Min;
    case DType::F32:
    case DType::F64: return op == Monoid::Sum || op == Monoid::Prod;
    default: return false;
  }
}

// out = a merged with b by `op`, elementwise (all three contiguous, one shape and dtype), as
// one map kernel on `dev`: how the simulations and the executor merge on a device.
void merge_on_device(DeviceBackend& dev, Monoid op, const DeviceView& a, const DeviceView& b,
                     const DeviceView& out);

}  // namespace tapestry::comm
