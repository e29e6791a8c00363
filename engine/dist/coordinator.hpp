// Rank 0's side of the MPI engine: runs a plan on every rank of the job.
//   start_coordinator(*comm::Mpi::start());            // rank 0, once: shuts workers down at exit
//   if (mpi_job_ranks() == g.num_ranks) report = run_plan_mpi(g);   // roots get their values
// run_plan_mpi sends the plan to every worker, runs rank 0's part over MpiTransport, gathers
// the roots' shards to rank 0 and waits for every worker's status. Any failure (a block on
// some rank, a bad message, Ctrl-C) aborts the run on every rank, leaves every root as it
// was, and throws the first real error as "rank r: ...". A worker that stays silent for
// TAPESTRY_MPI_TIMEOUT seconds (default 300) is reported; one that then ignores the abort
// marks the job broken: later runs are refused and the job is aborted at exit, never awaited.
// A worker process that dies is noticed within a fraction of a second (engine/dist/liveness.hpp)
// and reported the same way (the job is broken). Run the job with
// `--mca orte_abort_on_non_zero_status 0` (tapestry -n sets it) so mpirun leaves rank 0
// alive to say so; rank 0 then aborts the job itself.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/comm/mpi.hpp"
#include "engine/shard/rank_program.hpp"
#include "engine/plan/sharded_graph.hpp"

namespace tapestry {

// Rank 0 of an MPI job: remembers the session and registers shutdown_workers with atexit.
void start_coordinator(comm::Mpi& mpi);

// The ranks of the MPI job this process coordinates; 0 when it coordinates none.
int mpi_job_ranks();

// How slices cross between the ranks' devices in this MPI job: the device peers' name ("nccl",
// ...), or "none: <why>" (through the host over MPI); "none" outside an MPI job.
std::string device_transport();

// Runs `g` (planned for mpi_job_ranks() ranks) on the job. Throws as described above.
// `keys`: initial shards read from each rank's shard store, results kept there.
RunReport run_plan_mpi(const plan::ShardedGraph& g, const StoreKeys& keys = {});

// Runs an I/O job (engine/io/parallel_io.hpp: encode_io's bytes) on every rank: sends it as an
// Io command, runs `mine` (rank 0's part), and waits for every worker's status. Throws the
// first failure ("rank r: ...") once every rank answered; a dead or silent worker as run_plan_mpi.
void run_io_mpi(std::vector<char> job, const std::function<void()>& mine);

// Frees stored shards on every worker (rank 0 drops its own itself).
void drop_on_workers(const std::vector<uint64_t>& keys);

// Tells every worker to exit, then finalizes MPI (aborts the job when it is broken).
// Idempotent; runs at exit on its own.
void shutdown_workers();

}  // namespace tapestry
