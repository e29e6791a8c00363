// The head: rank 0 of an MPI job that a driver process launched (engine/dist/remote_job.hpp).
// It connects back to the driver, and runs what the driver sends through its Coordinator:
// plans (their values travel over the socket), I/O jobs, drops, replications, restores.
//   if (auto a = parse_job_address(config.job)) return head_main(coordinator, store, *a);
// When a worker is lost, every rank still running writes what it holds to the salvage folder
// (Coordinator::salvage), the head tells the driver which rank was lost, and the job ends;
// when the driver is gone, the job ends. Ctrl-C at the driver cancels the request running.
#pragma once

#include <optional>
#include <string>

#include "engine/dist/coordinator.hpp"
#include "engine/store/shard_store.hpp"

namespace tapestry {

// TAPESTRY_JOB, set by the driver for the job it launches: "HOST PORT TOKEN DRIVER_PID DIR".
struct JobAddress {
  std::string host;
  int port = 0;
  std::string token;
  int driver_pid = 0;
  std::string salvage_dir;
};
std::optional<JobAddress> parse_job_address(const std::string& text);
std::string format_job_address(const JobAddress& a);

// Serves the driver until it ends the job or the job is lost; the exit status.
int head_main(Coordinator& job, ShardStore& store, const JobAddress& address, int io_fault_rank);

}  // namespace tapestry
