// A session's settings, read from the process environment once (the one engine place that
// does), then handed to the layers below as plain values.
//   Config c = Config::from_environment();   // TAPESTRY_RANKS, TAPESTRY_DEVICE, ...
//   c.ranks = 4;                             // the command line may override what it names
//   Session s(c);                            // engine/session/session.hpp
// docs/debug.md lists every variable.
#pragma once

#include <cstdint>
#include <string>

#include "engine/comm/mpi.hpp"
#include "engine/run/retry.hpp"

namespace tapestry {

struct Config {
  int ranks = 1;                // TAPESTRY_RANKS: virtual ranks (loopback) outside an MPI job
  int64_t memory_per_rank = 0;  // TAPESTRY_MEMORY_PER_RANK (512M, 2G): bytes; 0: the default
  bool verify = false;          // TAPESTRY_VERIFY=1: verify every plan before it runs
  bool debug_plan = false;      // TAPESTRY_DEBUG=plan: the planner's graph after each pass
  bool records = true;         // TAPESTRY_RECORDS=0: small operations built as nodes (engine/run/pending.hpp)
  int threads = 0;             // TAPESTRY_THREADS: the kernels' threads; 0: one per core
  std::string isa;             // TAPESTRY_ISA: avx2 or avx512, the CPU kernels' vector set ("": widest)
  std::string device;          // TAPESTRY_DEVICE: cpu, cuda (gpu), sim, auto ("": auto)
  bool device_peers = true;    // TAPESTRY_DEVICE_PEERS=0: slices between devices go through the host
  int local_rank = 0;          // OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID
  int local_ranks = 1;         // OMPI_COMM_WORLD_LOCAL_SIZE or MPI_LOCALNRANKS: ranks on this machine
  bool mpi_launched = false;   // OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK: mpirun started us
  double mpi_timeout_s = 300;  // TAPESTRY_MPI_TIMEOUT: silence before a worker is reported
  std::string fault;           // TAPESTRY_FAULT=RANK:RUN[:oom]: a worker fails a run (tests)
  int io_fault_rank = -1;      // TAPESTRY_IO_FAULT=RANK: that rank fails every I/O job (tests)
  RetryPolicy retry;           // TAPESTRY_BLOCK_RETRIES=N, TAPESTRY_BLOCK_FAULT=EVERY[:TIMES] (tests)
  comm::LaunchEnv launch;      // what relaunching under mpirun needs (PATH, ...)
  // A driver process runs the MPI job (engine/dist/remote_job.hpp): under `tapestry -n N` and
  // as rank 0 of `mpirun -n N tapestry`. TAPESTRY_DRIVER=0: rank 0 of the job runs Lua itself
  // (the job then ends with any lost process).
  bool driver = true;
  int world_rank = 0, world_size = 1;  // OMPI_COMM_WORLD_RANK/SIZE (PMI_RANK/SIZE) when mpi_launched
  std::string job;                     // TAPESTRY_JOB: this process is a rank of a driver's job (head.hpp)
  std::string spill_dir;       // TAPESTRY_SPILL_DIR (--spill-dir): salvage and spill files go under it
  bool replicas = true;        // TAPESTRY_REPLICAS=0: no buddy replicas of stored tensors
  bool spill_fault = false;    // TAPESTRY_SPILL_FAULT=1: every write to the spill directory fails (tests)
  bool spill = true;           // TAPESTRY_SPILL=0: nothing is spilled when memory runs short (spill.hpp)
  bool shrink = false;         // TAPESTRY_SHRINK=1 (--shrink): a lost job is replaced by a smaller one
  std::string checkpoint_dir;  // TAPESTRY_CHECKPOINT_DIR (--checkpoint-dir): automatic checkpoints
  double checkpoint_every_min = 0;  // TAPESTRY_CHECKPOINT_EVERY (--checkpoint-every): minutes; 0: on demand
  // TAPESTRY_SAMPLE_SORT_MIN=N: the shortest line a sort on several ranks sorts as a sample sort
  // (lang/line_lua.cpp); below it the line is gathered to one rank, which is faster there.
  int64_t sample_sort_min = int64_t{1} << 20;
  // The running mesh keeps the documented default rates: a plain Config{} and
  // TAPESTRY_RATES=builtin (tests pin them); from the environment otherwise false, this
  // machine's measured rates (engine/session/machine_rates.hpp).
  bool builtin_rates = true;
  std::string cache_dir;  // $XDG_CACHE_HOME/tapestry, else $HOME/.cache/tapestry ("" if neither)

  static Config from_environment();
};

}  // namespace tapestry
