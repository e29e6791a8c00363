// Whether the processes of the MPI job still live: rank 0 watches its workers, and each worker
// watches rank 0 (the driver).
//   Peers p(mpi.size());  p.hello(w, "4242 node7");   // from each worker's Hello status
//   if (int w = p.lost(); w > 0) throw Error(p.obituary(w));
//   Driver d("4141 node7");  if (d.gone()) exit(...);  // a worker, from rank 0's Driver command
// A process on this host is looked at directly (kill(pid, 0) and /proc/PID/stat): one that is
// gone or a zombie is lost at once, even while it would be busy in a long block; one stopped
// (SIGSTOP, state T) for kStoppedGrace seconds is lost too (a Ctrl-Z of the whole job resumes
// before that). A worker on another host is only reported by the coordinator's silence timeout
// (TAPESTRY_MPI_TIMEOUT), and a driver on another host by mpirun.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace tapestry {

// How long a process may stay stopped before it counts as lost.
inline constexpr double kStoppedGrace = 3.0;

// "PID HOST" of this process.
std::string this_process();

class Peers {
 public:
  explicit Peers(int ranks = 1) : pid_(ranks, 0), host_(ranks), stopped_since_(ranks) {}
  void hello(int rank, const std::string& pid_and_host);
  bool known(int rank) const { return pid_[rank] != 0; }
  int pid(int rank) const { return pid_[rank]; }
  // The first worker found lost (gone, or stopped past the grace), or 0; looks at most every 100 ms.
  int lost();
  std::string obituary(int rank) const;  // "rank 2 (pid 4242 on node7) died ..." / "... is stopped ..."
  // The first part of it: "rank 2 (pid 4242 on node7) died" (or "is stopped (SIGSTOP)").
  std::string describe(int rank) const;
  // Whether the worker on this host is dead or stopped now (no grace): it cannot answer.
  bool down(int rank) const;
  // SIGKILLs every worker on this host that may still run: a lost job is ended at once, so
  // mpirun does not wait out its kill timeouts on a stopped or stuck rank.
  void kill_local() const;
  bool all_local() const;  // every worker said hello from this host

 private:
  std::vector<int> pid_;
  std::vector<std::string> host_;
  std::vector<std::chrono::steady_clock::time_point> stopped_since_;  // epoch: running
  std::vector<bool> stopped_;                                         // lost by being stopped
  std::chrono::steady_clock::time_point last_{};
};

// A worker's view of rank 0: gone() is true once the driver process on this host has died.
class Driver {
 public:
  void hello(const std::string& pid_and_host);
  bool gone();  // looks at most every 100 ms; false when the driver is on another host
  int pid() const { return pid_; }

 private:
  int pid_ = 0;
  bool here_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace tapestry
