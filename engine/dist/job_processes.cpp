#include "engine/dist/job_processes.hpp"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "engine/ir/error.hpp"

namespace tapestry {

// What an outer `mpirun` gives its ranks: the driver's own job must not inherit it, or its
// mpirun would take itself for a rank of the outer job.
bool outer_launch_variable(const std::string& name) {
  static const char* const prefixes[] = {"OMPI_COMM_WORLD_",
                                         "OMPI_APP_CTX_",
                                         "OMPI_MCA_ess",
                                         "OMPI_MCA_orte_app_num",
                                         "OMPI_MCA_orte_bound_at_launch",
                                         "OMPI_MCA_orte_ess_",
                                         "OMPI_MCA_orte_hnp_uri",
                                         "OMPI_MCA_orte_jobfam_session_dir",
                                         "OMPI_MCA_orte_launch",
                                         "OMPI_MCA_orte_local_daemon_uri",
                                         "OMPI_MCA_orte_num_nodes",
                                         "OMPI_MCA_orte_precondition_transports",
                                         "OMPI_MCA_orte_tmpdir_base",
                                         "OMPI_MCA_orte_top_session_dir",
                                         "OMPI_MCA_pmix",
                                         "OMPI_MCA_initial_wdir",
                                         "OMPI_MCA_mpi_oversubscribe",
                                         "OMPI_MCA_shmem_RUNTIME_QUERY_hint",
                                         "OMPI_COMMAND",
                                         "OMPI_ARGV",
                                         "OMPI_FILE_LOCATION",
                                         "OMPI_FIRST_RANKS",
                                         "OMPI_NUM_APP_CTX",
                                         "OMPI_UNIVERSE_SIZE",
                                         "PMIX_",
                                         "PMI_",
                                         "HFI_NO_BACKTRACE",
                                         "IPATH_NO_BACKTRACE",
                                         "TAPESTRY_JOB=",
                                         "TAPESTRY_RELAUNCHED=",
                                         "TAPESTRY_EXIT_FILE="};
  for (const char* p : prefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

std::string random_token() {
  unsigned char b[16] = {};
  if (FILE* f = std::fopen("/dev/urandom", "rb")) {
    if (std::fread(b, 1, sizeof b, f) != sizeof b) std::memset(b, 0, sizeof b);
    std::fclose(f);
  }
  std::string s;
  char hex[3];
  for (unsigned char c : b) std::snprintf(hex, sizeof hex, "%02x", c), s += hex;
  return s;
}

std::string host_name() {
  char h[256] = "";
  gethostname(h, sizeof h - 1);
  return h;
}

// The processes mpirun started (the ranks: Open MPI gives each a process group of its own).
std::vector<pid_t> ranks_of(pid_t mpirun) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] < '1' || name[0] > '9') continue;
    FILE* f = std::fopen((e.path() / "stat").c_str(), "r");
    if (!f) continue;
    char line[512] = "";
    const bool read = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    const char* close = read ? std::strrchr(line, ')') : nullptr;
    char state = 0;
    int ppid = 0;
    if (close && std::sscanf(close + 1, " %c %d", &state, &ppid) == 2 && ppid == mpirun && state != 'Z' &&
        state != 'X')
      out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

std::vector<RankProcess> rank_processes(pid_t mpirun) {
  std::vector<RankProcess> out;
  for (pid_t p : ranks_of(mpirun)) {
    RankProcess rp{p, -1, false};
    if (FILE* f = std::fopen(cat_str("/proc/", p, "/environ").c_str(), "r")) {
      std::string env;
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) env.append(buf, n);
      std::fclose(f);
      const std::string key = std::string(1, '\0') + "OMPI_COMM_WORLD_RANK=";
      const std::string all = std::string(1, '\0') + env;
      const size_t at = all.find(key);
      if (at != std::string::npos) rp.rank = std::atoi(all.c_str() + at + key.size());
    }
    if (FILE* f = std::fopen(cat_str("/proc/", p, "/stat").c_str(), "r")) {
      char line[512] = "";
      const bool read = std::fgets(line, sizeof line, f) != nullptr;
      std::fclose(f);
      const char* close = read ? std::strrchr(line, ')') : nullptr;
      rp.stopped = close && close[1] == ' ' && close[2] == 'T';
    }
    out.push_back(rp);
  }
  return out;
}

// Running (not gone, not a zombie).
bool alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  FILE* f = std::fopen(cat_str("/proc/", pid, "/stat").c_str(), "r");
  if (!f) return false;
  char line[512] = "";
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  const char* close = read ? std::strrchr(line, ')') : nullptr;
  return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

bool release_outer_binding() {
  const char* bound = std::getenv("OMPI_MCA_orte_bound_at_launch");
  if (!bound || std::strcmp(bound, "1") != 0) return false;
  // The launcher's own set is what the user gave the job (a taskset around mpirun stays kept);
  // the kernel further limits it to the cgroup's cpuset.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(getppid(), sizeof set, &set) != 0 || CPU_COUNT(&set) == 0) return false;
  bool any = false;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(e.path().filename().c_str()));
    if (tid > 0 && sched_setaffinity(tid, sizeof set, &set) == 0) any = true;
  }
  return any;
}

}  // namespace tapestry
