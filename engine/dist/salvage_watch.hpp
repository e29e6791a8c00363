// Every rank of a driver's job keeps a thread that saves what the rank holds when the job is
// lost, whatever its main thread is doing: a rank can be stuck inside an MPI call that waits on
// a dead peer (a large message whose sender died midway never completes), and its pieces must
// still reach the job that replaces this one.
//   SalvageWatch w(store, dir, rank);          // a rank of a driver's job, for its lifetime
//   w.watch_rank0("4242 node7");               // a worker: rank 0's "PID HOST" (Driver command)
//   request_salvage(dir);                      // whoever sees the loss first: head or driver
//   wait_salvaged(dir, ranks, 10.0);           // the ranks still running have written theirs
// The thread looks every 50 ms for the request file `DIR/salvage` or, on a worker, for rank 0
// gone while the driver (driver_pid) lives; then writes every piece the rank holds
// (engine/store/shard_file.hpp, then the marker DIR/wRANK.done). A worker then exits (status
// 1): its job is over. Rank 0 goes on, to tell the driver.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/store/shard_store.hpp"

namespace tapestry {

class SalvageWatch {
 public:
  SalvageWatch(ShardStore& store, std::string dir, int rank, int driver_pid);
  ~SalvageWatch();
  SalvageWatch(const SalvageWatch&) = delete;
  SalvageWatch& operator=(const SalvageWatch&) = delete;
  void watch_rank0(const std::string& pid_and_host);
  // Whether this rank's pieces are written (by the thread).
  bool done() const { return done_.load(); }

 private:
  void run();
  ShardStore& store_;
  std::string dir_;
  int rank_, driver_pid_;
  std::mutex mu_;
  std::string rank0_;  // "PID HOST", once known
  std::atomic<bool> stop_{false}, done_{false};
  std::thread thread_;
};

// Asks every rank of the job to salvage (creates DIR/salvage).
void request_salvage(const std::string& dir);
// Waits up to timeout_s until every rank in `ranks` has its marker; the ranks still missing.
std::vector<int> wait_salvaged(const std::string& dir, const std::vector<int>& ranks, double timeout_s);

}  // namespace tapestry
