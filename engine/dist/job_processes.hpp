// The processes of a driver's MPI job, as the driver sees them through /proc, and the little
// helpers its launch needs (engine/dist/remote_job.hpp).
//   for (const RankProcess& p : rank_processes(mpirun_pid)) if (p.stopped) ...
//   if (!alive(head_pid)) ...;   envs: every variable but outer_launch_variable's
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tapestry {

// A variable an outer `mpirun` gives its ranks: the driver's own job must not inherit it, or its
// mpirun would take itself for a rank of the outer job.
bool outer_launch_variable(const std::string& name);
std::string random_token();  // 32 hex digits from /dev/urandom
std::string host_name();
// The processes mpirun started (the ranks: Open MPI gives each a process group of its own).
std::vector<pid_t> ranks_of(pid_t mpirun);
// Each rank process of the job: its pid, its rank (OMPI_COMM_WORLD_RANK in its environment)
// and whether it is stopped (SIGSTOP).
struct RankProcess {
  pid_t pid;
  int rank;
  bool stopped;
};
std::vector<RankProcess> rank_processes(pid_t mpirun);
// Running (not gone, not a zombie).
bool alive(pid_t pid);
// Under `mpirun -n 2 tapestry`, Open MPI binds each rank to one core, and the driver's own job
// (launched from rank 0) would inherit that core: both of its ranks on it, each at half speed.
// A process an outer mpirun bound (OMPI_MCA_orte_bound_at_launch) gets back the CPUs that mpirun
// runs on, every thread of it, so the driver's job binds its ranks itself. True if it did.
bool release_outer_binding();

}  // namespace tapestry
