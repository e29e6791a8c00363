// MPI collectives for the engine: one communicator per group of ranks, and non-blocking
// reduces on them.
//   comm::MpiGroups& gs = mpi.groups();                 // owned by the MPI session
//   gs.join({{0, 1}, {0, 1, 2, 3}}, epoch, check);       // plan start, every rank, same list
//   auto c = gs.start_reduce({{0, 1}, 0, Monoid::Sum}, in, out);   while (!c->test()) ...
// Communicators come from MPI_Comm_create_group (only the members call it), created in the
// order of the list every rank is given, so overlapping groups cannot deadlock; they are
// cached by member set across plans and freed when the session ends.
//
// A failed run may leave a collective half-matched on a communicator (one member started it,
// another never will), and collectives match by order: reusing that communicator would merge
// a stale contribution into the next run's result. So after any failed run every rank calls
// retire_all(): the cached communicators are set aside (never used again, freed at the end,
// their context ids never recycled while a stale message may wait on them) and the next plan
// creates fresh ones. Handles of collectives that never completed keep their buffers here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/comm/collective.hpp"
#include "engine/ir/value.hpp"

namespace tapestry::comm {

class MpiGroups {
 public:
  // Duplicates MPI_COMM_WORLD as the parent of every group: collective over all ranks, so
  // it is built when the session starts. Creates the reduction ops MPI lacks.
  MpiGroups();
  ~MpiGroups();
  MpiGroups(const MpiGroups&) = delete;
  MpiGroups& operator=(const MpiGroups&) = delete;

  // Whether values of `dtype` can be merged with `op` (same answer on every rank).
  static bool supports(Monoid op, DType dtype);

  // Makes a communicator for each group in `groups` this rank belongs to and lacks, in list
  // order. Before creating one, the members tell each other they are ready (messages that
  // name `epoch` and the group) and this rank polls for theirs, calling `check` between polls
  // (rank 0 throws from it when a member died), so a dead member is reported instead of
  // hanging inside MPI_Comm_create_group. Not interruptible otherwise: every live member
  // reaches the same point, since plans join their groups before anything that can fail.
  void join(const std::vector<Group>& groups, uint64_t epoch, const std::function<void()>& check);

  // Starts a reduce (spec.root a rank), all-reduce (kAllMembers) or reduce-scatter
  // (spec.counts: MPI_Ireduce_scatter) over a joined group.
  std::unique_ptr<Collective> start_reduce(const ReduceSpec& spec, const View& in, const View& out);
  // Starts a broadcast (MPI_Ibcast), all-gather (MPI_Iallgatherv) or all-to-all
  // (MPI_Ialltoallv) of bytes over a joined group; the buffers (and the counts MPI reads until
  // it completes) are kept by the handle, or here when it is dropped unfinished.
  std::unique_ptr<Collective> start_exchange(const ExchangeSpec& spec, std::shared_ptr<std::vector<char>> in,
                                             std::shared_ptr<std::vector<char>> out);

  // After a failed run, on every rank: no cached communicator is used again.
  void retire_all();

  int64_t created() const;  // communicators created so far (tests: the cache works)
  int64_t retired() const;  // of which retired

 private:
  struct Impl;  // MPI handles stay out of this header
  std::unique_ptr<Impl> impl_;
  friend class MpiCollective;
};

}  // namespace tapestry::comm
