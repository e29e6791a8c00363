// Rank 0's view of the worker processes: their pids and hosts, and whether they still live.
//   Peers p(mpi.size());  p.hello(w, "4242 node7");   // from each worker's Hello status
//   if (int w = p.dead(); w > 0) throw Error(p.obituary(w));
// A worker on this host that is gone (or a zombie) is known dead at once with kill(pid, 0),
// even while it would be busy in a long block; a worker on another host is only reported
// by the coordinator's silence timeout (TAPESTRY_MPI_TIMEOUT).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace tapestry {

class Peers {
 public:
  explicit Peers(int ranks = 1) : pid_(ranks, 0), host_(ranks) {}
  void hello(int rank, const std::string& pid_and_host);
  bool known(int rank) const { return pid_[rank] != 0; }
  int pid(int rank) const { return pid_[rank]; }
  // The first worker found dead, or 0; looks at most every 100 ms.
  int dead();
  std::string obituary(int rank) const;  // "rank 2 (pid 4242) died ..."

 private:
  std::vector<int> pid_;
  std::vector<std::string> host_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace tapestry
