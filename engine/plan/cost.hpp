// The cost of a sharded graph on a mesh: a simulated makespan plus a penalty for memory.
//   PlanCost c = cost_of(lower(topo, a, initial, roots, m.ranks), m);
//   c.total()          // time + memory_penalty: what the search minimizes
//   c.bytes_moved      // exact bytes of transfers and combines; zero when nothing moves
// The simulation runs every rank's step list in program order: a block takes the roofline of
// its flops and bytes, a receive waits for its send, a combine for all its participants, and
// ranks run concurrently, so one rank's compute overlaps another's transfers. Transfers are
// alpha-beta on the link between the two ranks, and each rank's link sends one message at a
// time and receives one at a time: what a rank sends or receives in a phase adds up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/mesh.hpp"
#include "engine/plan/sharded_graph.hpp"

namespace tapestry::plan {

struct PlanCost {
  double time = 0;                // makespan estimate, s
  int64_t bytes_moved = 0;        // over all links (transfers and combines)
  double flops = 0;               // over all ranks
  int64_t peak_bytes = 0;         // the largest per-rank estimate (see cost_of)
  double memory_penalty = 0;      // s, added to time by total(): kOverMemory+ when over the limit
  std::vector<double> rank_busy;  // per rank: compute seconds (for explain and balance)
  // From sampled blocks (estimate.hpp), not a simulation of the whole sharded graph; time is
  // then the sum of the ops' estimated times, and rank_busy is empty.
  bool estimated = false;

  double total() const { return time + memory_penalty; }
};

// Peak memory per rank counts what is live at once (peak_memory.hpp: values freed after their
// last reader, as the executor frees them). Memory is a limit: a plan over
// Mesh::mem_bytes_per_rank on some rank costs kOverMemory seconds more than any plan that fits
// (plus a microsecond per byte over, so the least over-full one is still preferred).
inline constexpr double kOverMemory = 1e6;
PlanCost cost_of(const ShardedGraph& g, const Mesh& m);

std::string to_string(const PlanCost& c);

// An exchange's time alone (no waiting for its members): its collective's formula
// (collective_cost.hpp) over the slowest link among its members.
double exchange_time(const ShardedGraph& g, const Exchange& e, const Mesh& m);

}  // namespace tapestry::plan
