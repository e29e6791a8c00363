// The transport: how one rank's executor moves tensor slices to and from the other ranks.
//   comm::Transport& t = hub.endpoint(rank);          // LoopbackHub, later an MPI endpoint
//   t.send(1, comm::tag(comm::TagKind::Transfer, 7), slice_view);   // buffered: returns at once
//   if (auto v = t.try_recv(0, comm::tag(comm::TagKind::Transfer, 7))) store(box, v);
// A transport is one rank's endpoint. The executor (engine/exec/sharded_run) is written against
// this interface only, so the same code runs N virtual ranks in one process (loopback) or one
// rank per MPI process: swapping the transport is the whole port.
//
// Why only point-to-point: a Combine merges partials that cover different sub-boxes of its
// output (a regular grid gives equal boxes, an irregular one does not), so MPI_Reduce over one
// buffer does not fit in general; and merging the partials in plan order on the destination
// keeps the result bit-identical whatever the transport. The executor therefore builds every
// collective a plan needs (reduce / all-reduce / reduce-scatter of partials, the gather of the
// observed values to rank 0) from send + try_recv. An MPI transport may later add a fast path.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/ir/value.hpp"

namespace tapestry::comm {

// What a message carries; with the plan's indices it names the message uniquely, so sender
// and receiver agree on it without any handshake.
enum class TagKind : uint8_t {
  Transfer = 1,  // a = transfer index
  Partial = 2,   // a = combine index, b = block index of the partial
  Output = 3,    // a = index into ShardedGraph::outputs (gather to rank 0)
};

using Tag = uint64_t;

// kind in the top 4 bits, a in the next 30, b in the low 30 (plans are far smaller).
inline Tag tag(TagKind kind, uint64_t a, uint64_t b = 0) {
  return (static_cast<uint64_t>(kind) << 60) | ((a & 0x3fffffffu) << 30) | (b & 0x3fffffffu);
}

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;  // this endpoint's rank, 0..size()-1
  virtual int size() const = 0;  // ranks in the communicator

  // Sends the elements of `slice` (any strides) to rank `to`. Buffered: never waits for the
  // receiver, and `slice` may be overwritten as soon as it returns. Sending to oneself is an
  // internal error (the executor keeps local data local).
  virtual void send(int to, Tag tag, const View& slice) = 0;

  // The message from `from` with `tag` as a new contiguous value (shape and dtype as sent),
  // or nullptr when it has not arrived yet. Never blocks: the executor decides whether to
  // run other work or to wait. Each message is received once.
  virtual std::shared_ptr<Value> try_recv(int from, Tag tag) = 0;

  // Messages sent by this endpoint and their payload bytes (for tests and tp.stats()).
  virtual int64_t messages_sent() const = 0;
  virtual int64_t bytes_sent() const = 0;
};

}  // namespace tapestry::comm
