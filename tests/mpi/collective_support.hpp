// What the MPI collective tests share (collective_test.cpp, collective_exchange_test.cpp): the
// same deterministic graph on every rank, the single-rank reference, and a plan run on this rank.
#pragma once

#include <memory>
#include <utility>

#include "engine/comm/mpi.hpp"
#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/sharded_graph.hpp"
#include "engine/shard/rank_program.hpp"

namespace tapestry::mpitest {

comm::Mpi& mpi();
int ranks();
int me();

// Deterministic values, the same on every rank (each builds the same graph).
NodeRef source(DType t, const Shape& s, int seed);

// y's value from the single-rank evaluator, then forgotten so a plan computes it afresh.
std::shared_ptr<const Value> reference(const NodeRef& y);

struct Outcome {
  std::shared_ptr<Value> value;  // rank 0: y gathered
  int64_t started = 0;           // collectives this rank started
  int64_t messages = 0, bytes = 0;
  int collective_combines = 0;
};

// Every plan run of this binary takes the next epoch: the mailbox drops messages of epochs
// before the newest it has seen, as it drops those of an aborted run.
uint64_t next_epoch();

// Runs p to its end and sends its outputs; rank 0 gathers and returns `root`'s value.
std::shared_ptr<Value> finish(RankProgram& p, uint64_t root);

// Runs this rank's part of g (every rank calls it with the same plan); y is gathered on rank 0.
Outcome run(const plan::ShardedGraph& g, const NodeRef& y, bool collectives);

// Rank 0: got equals want (within `rel` relative for floats).
void check_value(const Outcome& o, const std::shared_ptr<const Value>& want, double rel);

// Splits [0, n) into `parts` near-equal ranges.
std::pair<int64_t, int64_t> part(int64_t n, int parts, int i);

}  // namespace tapestry::mpitest
