// Every engine setting taken from the environment: a value that does not parse keeps the
// default, as each layer used to do on its own.
#include "engine/session/config.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "engine/session/memory_budget.hpp"

namespace tapestry {

namespace {

const char* var(const char* name) { return std::getenv(name); }

bool set(const char* name) { return var(name) != nullptr; }

}  // namespace

Config Config::from_environment() {
  Config c;
  if (const char* e = var("TAPESTRY_RANKS")) c.ranks = std::max(1, std::atoi(e));
  if (const char* e = var("TAPESTRY_MEMORY_PER_RANK"); e && !parse_byte_count(e, c.memory_per_rank))
    c.memory_per_rank = 0;
  if (const char* e = var("TAPESTRY_VERIFY")) c.verify = std::string_view(e) == "1";
  if (const char* e = var("TAPESTRY_DEBUG")) c.debug_plan = std::string_view(e) == "plan";
  if (const char* e = var("TAPESTRY_RECORDS")) c.records = std::string_view(e) != "0";
  if (const char* e = var("TAPESTRY_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(e, &end, 10);
    if (end != e && *end == '\0' && n >= 1 && n <= 4096) c.threads = static_cast<int>(n);
  }
  if (const char* e = var("TAPESTRY_ISA")) c.isa = e;
  if (const char* e = var("TAPESTRY_DEVICE")) c.device = e;
  if (const char* e = var("TAPESTRY_DEVICE_PEERS")) c.device_peers = std::string_view(e) != "0";
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* e = var(v)) {
      c.local_rank = std::atoi(e);
      break;
    }
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* e = var(v); e && std::atoi(e) > 0) {
      c.local_ranks = std::atoi(e);
      break;
    }
  c.mpi_launched = set("OMPI_COMM_WORLD_SIZE") || set("PMI_SIZE") || set("PMIX_RANK");
  if (const char* e = var("TAPESTRY_MPI_TIMEOUT"); e && std::atof(e) > 0) c.mpi_timeout_s = std::atof(e);
  if (const char* e = var("TAPESTRY_FAULT")) c.fault = e;
  if (const char* e = var("TAPESTRY_IO_FAULT"); e && *e) c.io_fault_rank = std::atoi(e);
  if (const char* e = var("TAPESTRY_BLOCK_RETRIES"); e && *e && std::atoi(e) >= 0 && std::atoi(e) <= 100)
    c.retry.attempts = std::atoi(e) + 1;
  if (const char* e = var("TAPESTRY_BLOCK_FAULT")) {
    long every = 0, times = 1;
    if (std::sscanf(e, "%ld:%ld", &every, &times) >= 1 && every > 0 && times > 0)
      c.retry.fault_every = every, c.retry.fault_times = static_cast<int>(times);
  }
  if (const char* e = var("TAPESTRY_SAMPLE_SORT_MIN"); e && std::atoll(e) >= 1)
    c.sample_sort_min = std::atoll(e);
  if (const char* e = var("PATH")) c.launch.path = e;
  c.launch.relaunched = set("TAPESTRY_RELAUNCHED");
  const char* rates = var("TAPESTRY_RATES");
  c.builtin_rates = rates && std::string_view(rates) == "builtin";
  if (const char* e = var("XDG_CACHE_HOME"); e && *e == '/') c.cache_dir = std::string(e) + "/tapestry";
  else if (const char* h = var("HOME"); h && *h) c.cache_dir = std::string(h) + "/.cache/tapestry";
  c.launch.sigkill_timeout_set = set("OMPI_MCA_odls_base_sigkill_timeout");
  if (const char* e = var("TAPESTRY_DRIVER")) c.driver = std::string_view(e) != "0";
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* e = var(v)) {
      c.world_rank = std::atoi(e);
      break;
    }
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* e = var(v); e && std::atoi(e) > 0) {
      c.world_size = std::atoi(e);
      break;
    }
  if (const char* e = var("TAPESTRY_JOB")) c.job = e;
  if (const char* e = var("TAPESTRY_SPILL_DIR"); e && *e) c.spill_dir = e;
  if (const char* e = var("TAPESTRY_REPLICAS")) c.replicas = std::string_view(e) != "0";
  if (const char* e = var("TAPESTRY_SPILL_FAULT")) c.spill_fault = std::string_view(e) == "1";
  if (const char* e = var("TAPESTRY_SPILL")) c.spill = std::string_view(e) != "0";
  if (const char* e = var("TAPESTRY_SHRINK")) c.shrink = std::string_view(e) == "1";
  if (const char* e = var("TAPESTRY_CHECKPOINT_DIR"); e && *e) c.checkpoint_dir = e;
  if (const char* e = var("TAPESTRY_CHECKPOINT_EVERY"); e && std::atof(e) > 0)
    c.checkpoint_every_min = std::atof(e);
  return c;
}

}  // namespace tapestry
