// Collectives: merging one equal-shaped value per member of a group of ranks, started once
// and then polled, so an executor keeps running other work while the network merges.
//   comm::ReduceSpec s{{0, 1, 3}, 0, Monoid::Sum};             // reduce onto rank 0
//   auto c = t.start_reduce(s, mine, out);   while (!c->test()) { other work }   // out = Σ mine
// A transport offers them through Transport::can_reduce / join_groups / start_reduce; which
// combines of a plan use them is decided by plan_collectives (engine/comm/collective_plan.hpp).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/monoid.hpp"

namespace tapestry::comm {

// The ranks of a collective, sorted and distinct; this rank is one of them.
using Group = std::vector<int>;

// ReduceSpec::root for an all-reduce: every member receives the merged value.
inline constexpr int kAllMembers = -1;

// The most elements one collective merges (MPI counts are ints); larger combines go point to point.
inline constexpr int64_t kMaxCollectiveElements = std::numeric_limits<int32_t>::max();

struct ReduceSpec {
  Group group;
  int root = kAllMembers;   // the rank that receives the result, or kAllMembers
  Monoid op = Monoid::Sum;  // the merge (kernels/monoid.hpp)
  // A reduce-scatter when not empty: member i (in group order) receives counts[i] elements of
  // the merge, the i-th run of `in` (which holds their sum, in group order); root is ignored.
  std::vector<int64_t> counts;
};

// Moving slices among a group as one collective (plan::Exchange): a broadcast, an all-gather
// or an all-to-all of bytes, which a transport runs as MPI_Ibcast / MPI_Iallgatherv /
// MPI_Ialltoallv (or NCCL) on a communicator of the group.
//   comm::ExchangeSpec s{comm::ExchangeKind::AllGather, {0, 1, 2}, -1, {n0, n1, n2}, {}};
//   auto c = t.start_exchange(s, mine, all);   while (!c->test()) { other work }
enum class ExchangeKind : uint8_t { Broadcast, AllGather, AllToAll };
const char* exchange_name(ExchangeKind k);  // "broadcast", "all-gather", "all-to-all"

// Counts are bytes, per member in group order; `in` and `out` are contiguous byte runs.
struct ExchangeSpec {
  ExchangeKind kind = ExchangeKind::Broadcast;
  Group group;
  int root = -1;  // Broadcast: the member whose `in` every other member receives into `out`
  // Broadcast: {bytes}. AllGather: what each member contributes (the same list on every
  // member); `in` holds this rank's, `out` every member's, this rank's included, in group
  // order. AllToAll: what this rank sends each member, packed in `in` in group order (its own
  // entry 0).
  std::vector<int64_t> counts;
  std::vector<int64_t> recv;         // AllToAll: what this rank receives from each member, into `out`
  int member(int rank) const;        // rank's place in the group
  int64_t sent(int rank) const;      // bytes `rank` sends to the others (as point to point would)
  int64_t received(int rank) const;  // bytes it receives from the others; 0: it only contributes
};

// The most bytes one exchange buffer holds (MPI counts are ints); larger ones go point to point.
inline constexpr int64_t kMaxExchangeBytes = std::numeric_limits<int32_t>::max();

// A started collective. Destroying one that has not completed is allowed (a failed run):
// the transport keeps its buffers alive for as long as the network may still touch them.
class Collective {
 public:
  virtual ~Collective() = default;
  // Whether it has completed: then `out` holds the result (on receiving members) and `in`
  // may be reused. Never blocks; each call also lets the collective progress.
  virtual bool test() = 0;
};

}  // namespace tapestry::comm
