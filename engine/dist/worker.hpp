// The worker ranks of the MPI engine, and the messages rank 0 and the workers exchange.
//   comm::Mpi* mpi = comm::Mpi::start(config.mpi_launched);
//   if (mpi && mpi->rank() != 0) return worker_main(*mpi, {store, dev});   // serve rank 0 until shutdown
//   encode_command({Command::Run, epoch, encode_plan(g)})      // rank 0 (engine/dist/coordinator)
// A worker waits for a command, runs its part of each plan over MpiTransport, and answers
// every run with exactly one status: done (with its counts), failed (the error, naming this
// rank), or aborted (rank 0 gave the run up because another rank failed). While it waits on
// a slice it watches for rank 0's abort, so one failed rank never leaves the others stuck.
// Between commands it keeps the shards of stored tensors (engine/store/shard_store.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/comm/mpi.hpp"
#include "engine/shard/rank_program.hpp"
#include "engine/store/shard_store.hpp"

namespace tapestry {

struct Command {
  // Drop: free the stored shards of `drop` (a rebind's old version, a failed run's new one).
  // Io: this rank's part of a parallel .npy read or write (engine/io/parallel_io.hpp), the job's
  // bytes in `plan`; answered by one status like a run (protocol 4).
  // Peers: join the job's device peers (engine/device/peers.hpp) with the id in `plan`; answered
  // by one status (protocol 5).
  // Driver: rank 0's "PID HOST" in `plan`, so the worker can exit when rank 0 is gone (protocol 7).
  // Replicate: send this rank's pieces of the keys in `drop` to its buddy and keep its
  // predecessor's (engine/dist/replica.hpp). Salvage: write every piece held to the folder
  // named in `plan` (a lost job's last act). Restore: load the pieces encode_restore's job in
  // `plan` gives this rank. Each answered by one status (protocol 10).
  enum Kind : uint8_t {
    Run = 1,
    Abort = 2,
    Shutdown = 3,
    Drop = 4,
    Io = 5,
    Peers = 6,
    Driver = 7,
    Replicate = 8,
    Salvage = 9,
    Restore = 10
  };
  // Trace: record trace events and send them back. DevicePeers: the run's transfers go from
  // device to device, through the peers every rank joined (protocol 5).
  // Choices: `plan` is encode_choices's, and each rank lowers its own part (protocol 8).
  enum Flags : uint8_t { Trace = 1, DevicePeers = 2, Choices = 4 };
  Kind kind = Run;
  uint64_t epoch = 0;          // which run (Run and Abort)
  std::vector<char> plan;      // Run: encode_plan's bytes
  uint8_t flags = 0;           // (protocol version 2)
  StoreKeys store;             // Run: initial shards read from / results kept in the shard store (3)
  std::vector<uint64_t> drop;  // Drop: the keys to free (3); Replicate: the keys to replicate (9)

  // A command without store keys (all but Run's kept results and Drop's keys).
  static Command of(Kind kind, uint64_t epoch = 0, std::vector<char> plan = {}, uint8_t flags = 0) {
    Command c;
    c.kind = kind;
    c.epoch = epoch;
    c.plan = std::move(plan);
    c.flags = flags;
    return c;
  }
};

struct Status {
  // Hello: a worker's first message, "PID HOST", so rank 0 can tell when it dies.
  enum Kind : uint8_t { Done = 1, Failed = 2, Aborted = 3, Hello = 4 };
  enum Error : uint8_t { User = 0, Internal = 1, Cancelled = 2 };  // which exception to rethrow
  enum Caps : uint8_t { CanJoinPeers = 1 };  // Hello: what this rank's device can do (protocol 5)
  Kind kind = Done;
  Error error = User;
  uint64_t epoch = 0;
  int64_t blocks = 0, messages = 0, bytes = 0;
  int64_t transfer_bytes = 0, combine_bytes = 0, gathered_bytes = 0;  // RunReport's (protocol 9)
  // The rank's spills to disk so far, in all (its shard store's; every status carries them so
  // rank 0 can report the job's in tp.stats(), protocol 11).
  int64_t spills = 0, spill_bytes = 0, spill_readbacks = 0;
  std::string message;      // Failed: "rank 2: ..."
  std::vector<char> trace;  // a traced run's events (trace::encode_events, from the run's start)
  uint8_t caps = 0;         // Hello
  static Status failed(Error error, uint64_t epoch, std::string message) {
    Status s;
    s.kind = Failed;
    s.error = error;
    s.epoch = epoch;
    s.message = std::move(message);
    return s;
  }
};

std::vector<char> encode_command(const Command& c);
std::vector<char> encode_status(const Status& s);
// Throw Error ("command rejected: ...", "status rejected: ...") when the bytes are not well formed.
Command decode_command(std::span<const char> bytes);
Status decode_status(std::span<const char> bytes);

// The one mapping between exceptions and failed statuses, used by every rank and by loopback.
// failure_status: the exception in flight (call it in a catch block) as rank's Failed status of
// `epoch`, its message with "rank r: " in front: an Error or running out of memory is User, a
// Cancelled is Cancelled, anything else Internal. throw_failure throws what such a status
// stands for: Error, InternalError or Cancelled.
Status failure_status(int rank, uint64_t epoch);
[[noreturn]] void throw_failure(const Status& s);

// What a worker serves with: its session's parts and settings (engine/session/session.hpp).
struct WorkerSetup {
  ShardStore& store;             // the stored shards of this rank
  DeviceBackend* dev = nullptr;  // the rank's device, or nullptr: the CPU
  bool device_peers = false;     // it offers to join device peers (rank 0 asks all or none)
  // TAPESTRY_FAULT=RANK:RUN[:oom] makes rank RANK fail its RUN-th plan (1-based) with an
  // injected error, or a real out-of-memory allocation — the tests' way to fail one worker.
  std::string fault;
  int io_fault_rank = -1;  // TAPESTRY_IO_FAULT: this rank fails its I/O jobs when it is it
  // A job a driver launched (engine/dist/remote_job.hpp): when rank 0 is gone while the driver
  // (this pid, on this host) lives, the worker writes what it holds to `salvage_dir` first.
  std::string salvage_dir;
  int driver_pid = 0;
};

// Ranks 1..N-1: serves rank 0's commands until shutdown; the process's exit status. A worker
// whose driver (rank 0) is gone exits at once with status 1, idle or within a run (after
// salvaging its pieces, on a job a driver launched).
int worker_main(comm::Mpi& mpi, const WorkerSetup& setup);

}  // namespace tapestry
