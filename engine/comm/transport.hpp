// The transport: how one rank's executor moves tensor slices to and from the other ranks.
//   comm::Transport& t = hub.endpoint(rank);          // LoopbackHub, later an MPI endpoint
//   t.send(1, comm::tag(comm::TagKind::Transfer, 7), slice_view);   // buffered: returns at once
//   if (auto v = t.try_recv(0, comm::tag(comm::TagKind::Transfer, 7))) store(box, v);
// A transport is one rank's endpoint. The executor (engine/shard/rank_program) is written against
// this interface only, so the same code runs N virtual ranks in one process (loopback) or one
// rank per MPI process: swapping the transport is the whole port.
//
// Point-to-point and collectives. Every combine (a merge of partial results, see
// plan::Combine) can be built from send + try_recv: every participant sends its partials over
// `out` to each destination, which merges them in plan order. That works for any combine,
// including irregular ones whose partials cover different sub-boxes of `out`, and it is what
// the loopback transport uses. A transport may also offer collectives (engine/comm/collective.hpp):
// the MPI transport runs a regular combine (every partial covers all of `out`) as one
// non-blocking MPI_Ireduce / MPI_Iallreduce on a communicator of its participants (and the
// pieces of a reduce-scatter as one MPI_Ireduce_scatter), so the
// network merges in a tree or ring instead of funnelling every partial into each destination.
// Collectives merge in an order of the MPI library's choosing: sums agree with the
// point-to-point result within rounding (1e-5 relative), not bit for bit, while max, min,
// integer and logical merges and everything that is not a combine stay exact. Transfers and
// the gather of observed values to rank 0 stay point-to-point.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/comm/collective.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"

namespace tapestry::comm {

// What a message carries; with the plan's indices it names the message uniquely, so sender
// and receiver agree on it without any handshake.
enum class TagKind : uint8_t {
  Transfer = 1,  // a = its order among the plan's transfers between the two ranks
  Partial = 2,   // a = its order among the plan's partials sent between the two ranks
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

  // Messages sent by this endpoint and their payload bytes (for tests and tp.stats()). A
  // collective counts as one message of the bytes this rank contributes to it (none for the
  // root of a reduce, which only receives).
  virtual int64_t messages_sent() const = 0;
  virtual int64_t bytes_sent() const = 0;

  // Called before a long computation: gives this endpoint's sends up to `max_s` seconds to
  // leave. Over MPI a message past the eager size moves only while its sender is inside MPI,
  // so a halo sent just before a 15 ms block would otherwise reach its receiver after it.
  virtual void push_sends(double /*max_s*/) {}

  // Collectives, where the transport has them; the defaults say "none", and the executor
  // then merges partials point to point. The answers must be the same on every rank.
  // Whether start_reduce can merge values of `dtype` with `op`.
  virtual bool can_reduce(Monoid /*op*/, DType /*dtype*/) const { return false; }
  // Called once at plan start by every rank with the same list (in the plan's order): makes
  // each group this rank belongs to ready for collectives, waiting for its other members.
  virtual void join_groups(const std::vector<Group>& /*groups*/) {}
  // Starts merging `in` (contiguous, this rank's contribution) over spec.group, into `out`
  // (contiguous, same shape) on the receiving members; `out` is ignored elsewhere. Never
  // blocks. The members of a group start their collectives on it in the same order; `in` and
  // `out` are not touched by the caller until the returned handle's test() says done.
  virtual std::unique_ptr<Collective> start_reduce(const ReduceSpec& /*spec*/, const View& /*in*/,
                                                   const View& /*out*/) {
    internal_fail(__FILE__, __LINE__, "start_reduce on a transport without collectives");
  }
  // Whether start_reduce takes a reduce-scatter (ReduceSpec::counts).
  virtual bool can_reduce_scatter() const { return false; }
  // Exchanges (broadcast, all-gather, all-to-all of bytes; collective.hpp), where the transport
  // has them: the same answer on every rank. start_exchange never blocks; `in` and `out` (sized
  // as the spec says; `out` unused where this rank receives nothing) are not touched by the
  // caller until test() says done. Members start their collectives on a group in one order.
  virtual bool can_exchange() const { return false; }
  virtual std::unique_ptr<Collective> start_exchange(const ExchangeSpec& /*spec*/,
                                                     std::shared_ptr<std::vector<char>> /*in*/,
                                                     std::shared_ptr<std::vector<char>> /*out*/) {
    internal_fail(__FILE__, __LINE__, "start_exchange on a transport without exchanges");
  }
  // Collectives this endpoint started (tests, and the proof that a plan used them).
  virtual int64_t collectives_started() const { return 0; }
};

}  // namespace tapestry::comm
