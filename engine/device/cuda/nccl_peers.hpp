// Device peers over NCCL (engine/device/peers.hpp), inside the CUDA plugin.
//   std::string id = nccl_peer_id();                       // rank 0; sent to the others by tapestry
//   std::unique_ptr<comm::DevicePeers> p = join_nccl_peers(id, rank, size);   // every rank at once
// Sends and receives run on a stream of their own: a send first waits (on the device, through
// an event) for the kernels queued before it on the compute stream, so it reads finished data;
// a receive's consumers are launched only after test() saw its event, so compute never queues
// behind NCCL and the host never blocks on it. An operation that never completes (a failed run
// whose peer gave up) keeps its buffer until the communicator is aborted.
#pragma once

#include <memory>
#include <string>

#include "engine/device/peers.hpp"

namespace tapestry::cuda {

// NCCL's version (4 bytes) followed by a new unique id (128 bytes).
std::string nccl_peer_id();

// ncclCommInitRank on this thread's device; a version other than this process's NCCL is an Error.
std::unique_ptr<comm::DevicePeers> join_nccl_peers(const std::string& id, int rank, int size);

}  // namespace tapestry::cuda
