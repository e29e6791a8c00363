// Which combines of a plan run as collectives, and on which groups of ranks.
//   comm::CollectivePlan cp = comm::plan_collectives(g, t);   // the same on every rank
//   t.join_groups(cp.groups);                                  // at plan start, every rank
//   if (cp.combines[c].collective) t.start_reduce(cp.combines[c].spec, mine, out);
// A pure function of the plan and of the transport's (rank-independent) capabilities, so
// every rank decides alike without a message: a combine must run either as a collective on
// all its participants or point to point on all of them, never half and half.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "engine/comm/collective.hpp"
#include "engine/comm/transport.hpp"
#include "engine/plan/sharded_graph.hpp"

namespace tapestry::comm {

struct CombineRoute {
  bool collective = false;  // false: point to point (send + try_recv)
  ReduceSpec spec;          // when collective: group = the combine's participants
  // A member of a reduce-scatter run as one MPI_Ireduce_scatter: every combine of the group,
  // by destination in group order (spec.counts: their elements). The first of them in the
  // plan starts it; each destination's own combine takes its piece.
  std::vector<size_t> scatter;
};

// An exchange (plan::Exchange) runs as the transport's collective on its members, or as its
// transfers, point to point.
struct ExchangeRoute {
  bool collective = false;
  Group group;  // its members
};

struct CollectivePlan {
  std::vector<CombineRoute> combines;    // one per g.combines
  std::vector<ExchangeRoute> exchanges;  // one per g.exchanges
  std::vector<Group> groups;             // distinct, in order of first use
  int count() const;                     // combines that run as collectives
  int exchange_count() const;            // exchanges that do
};

// A combine runs as a collective when the transport can reduce its kind and dtype, it has
// two or more participants, every partial covers all of `out` (a regular grid; an irregular
// combine stays point to point), its destination is one rank (reduce) or every participant
// (all-reduce), it fits one collective's count, and on every member of its group the
// group's collectives come in the same order (collectives on a communicator match by order).
// The one-destination combines of a node over the same participants, one to each of them
// with a piece of the partials they all cover, are one reduce-scatter where the transport
// has them (can_reduce_scatter): one collective instead of one reduce per piece.
// An exchange runs as a collective when the transport has exchanges, its tensor is at most
// kMaxCollectiveExchangeBytes and its buffers fit an MPI count (its tensor's bytes times its
// members, kMaxExchangeBytes); its members meet the collectives of a group, combines and
// exchanges alike, in one order.
inline constexpr int64_t kMaxCollectiveExchangeBytes = int64_t(16) << 20;
CollectivePlan plan_collectives(const plan::ShardedGraph& g, const Transport& t);

// What plan_collectives asks of a transport, or of the ranks' device peers (whose merges
// run on the devices, engine/device/peers.hpp): the same answers on every rank.
struct Capabilities {
  std::function<bool(Monoid, DType)> reduce;  // empty: no reduces
  bool reduce_scatter = false;
  bool exchange = false;
  static Capabilities of(const Transport& t);  // refers to t
};
CollectivePlan plan_collectives(const plan::ShardedGraph& g, const Capabilities& can);

}  // namespace tapestry::comm
