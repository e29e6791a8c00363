// Device peers between the virtual ranks of one process (run_plan's loopback ranks): a transfer
// is one copy by `copier`, with NCCL's rules enforced, so the executor's order of posting is
// tested in one process exactly as it must hold on a GPU cluster.
//   LocalPeersHub hub(4, copier);                  // copier: the device the ranks share
//   auto s = hub.endpoint(0).send(1, x, 7);  auto r = hub.endpoint(1).recv(0, y, 7);  r->test();
// The rules (peers.hpp): each rank's operations complete in the order it posted them; a
// send completes together with the receive it meets, and only when both are the next of their
// ranks; pairs meet by order. A pair that meets with different labels, shapes or dtypes is an
// InternalError (on NCCL it would mix up data silently).
// Exchanges (has_exchanges) meet as NCCL's grouped collectives do: one is the next operation
// of every member at once, or none of it runs; then each member's `out` is filled as
// ExchangeSpec lays it out. Members of one group that posted different exchanges there
// (labels, kinds, counts that do not pair) are an InternalError: on NCCL the collectives of a
// communicator match by order. A member whose next operation is another group's exchange is
// waited for. Reductions (can_reduce: peers_can_merge) meet the same way and merge with
// merge_on_device on `copier`, member by member in group order, as NCCL's would: every member's
// `out` (a reduce's root only; a reduce-scatter's run each) then holds the merge.
// copier: the device every virtual rank computes on, or, for tests that give each rank a
// simulated device of its own, a HostBackend (their memory is host memory).
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "engine/device/peers.hpp"

namespace tapestry::comm {

class LocalPeersHub {
 public:
  LocalPeersHub(int ranks, DeviceBackend& copier);
  ~LocalPeersHub();
  DevicePeers& endpoint(int rank);
  // Operations posted and not completed, over all ranks (0 after a run that finished).
  int64_t pending() const;
  int64_t sends() const;
  int64_t bytes_sent() const;

  struct Op;  // one posted send or receive
  // Completes every pair that can meet now (called by each handle's test()).
  void progress();
  std::shared_ptr<Op> post(int rank, bool send, int peer, const DeviceView& buf, uint64_t label);
  std::shared_ptr<Op> post_exchange(int rank, const ExchangeSpec& spec, const DeviceView& in,
                                    const DeviceView& out, uint64_t label);
  std::shared_ptr<Op> post_reduce(int rank, const ReduceSpec& spec, const DeviceView& in,
                                  const DeviceView& out, uint64_t label);
  int64_t exchanges() const;   // exchanges completed (each counted once)
  int64_t reductions() const;  // reductions completed (each counted once)

 private:
  class Endpoint;
  DeviceBackend& copier_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<std::deque<std::shared_ptr<Op>>> queues_;  // per rank, posted and not completed
  int64_t sends_ = 0, bytes_ = 0, exchanges_ = 0, reductions_ = 0;
  bool meet_exchange(int rank);  // completes the exchange at the front of rank's queue if it can
  bool meet_reduce(int rank);    // likewise a reduction
  void count_post(int rank, int64_t bytes);
};

}  // namespace tapestry::comm
