// Config::from_environment reads each variable (and keeps the default for a value that does
// not parse).
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "engine/session/config.hpp"

using namespace tapestry;

namespace {

// Sets (or unsets, nullopt) variables for one test and puts the old values back after.
class Env {
 public:
  void set(const char* name, std::optional<std::string> value) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~Env() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
      else unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

const char* const kAll[] = {"TAPESTRY_RANKS",
                            "TAPESTRY_MEMORY_PER_RANK",
                            "TAPESTRY_VERIFY",
                            "TAPESTRY_THREADS",
                            "TAPESTRY_DEVICE",
                            "TAPESTRY_DEVICE_PEERS",
                            "OMPI_COMM_WORLD_LOCAL_RANK",
                            "MPI_LOCALRANKID",
                            "SLURM_LOCALID",
                            "OMPI_COMM_WORLD_SIZE",
                            "PMI_SIZE",
                            "PMIX_RANK",
                            "OMPI_COMM_WORLD_LOCAL_SIZE",
                            "MPI_LOCALNRANKS",
                            "TAPESTRY_MPI_TIMEOUT",
                            "TAPESTRY_FAULT",
                            "TAPESTRY_IO_FAULT",
                            "PATH",
                            "TAPESTRY_RELAUNCHED",
                            "OMPI_MCA_odls_base_sigkill_timeout"};

}  // namespace

TEST_CASE("engine.session.config.defaults_when_nothing_is_set") {
  Env env;
  for (const char* v : kAll) env.set(v, std::nullopt);
  const Config c = Config::from_environment();
  const Config d;
  CHECK(c.ranks == 1);
  CHECK(c.memory_per_rank == 0);
  CHECK_FALSE(c.verify);
  CHECK(c.threads == 0);
  CHECK(c.device.empty());
  CHECK(c.device_peers);
  CHECK(c.local_rank == 0);
  CHECK(c.local_ranks == 1);
  CHECK_FALSE(c.mpi_launched);
  CHECK(c.mpi_timeout_s == 300);
  CHECK(c.fault.empty());
  CHECK(c.io_fault_rank == -1);
  CHECK(c.launch.path == d.launch.path);
  CHECK_FALSE(c.launch.relaunched);
  CHECK_FALSE(c.launch.sigkill_timeout_set);
}

TEST_CASE("engine.session.config.reads_each_variable") {
  Env env;
  for (const char* v : kAll) env.set(v, std::nullopt);
  env.set("TAPESTRY_RANKS", "4");
  env.set("TAPESTRY_MEMORY_PER_RANK", "1048576");
  env.set("TAPESTRY_VERIFY", "1");
  env.set("TAPESTRY_THREADS", "3");
  env.set("TAPESTRY_DEVICE", "sim");
  env.set("TAPESTRY_DEVICE_PEERS", "0");
  env.set("SLURM_LOCALID", "5");
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "8");
  env.set("PMIX_RANK", "0");
  env.set("TAPESTRY_MPI_TIMEOUT", "2.5");
  env.set("TAPESTRY_FAULT", "2:1:oom");
  env.set("TAPESTRY_IO_FAULT", "3");
  env.set("PATH", "/opt/mpi/bin");
  env.set("TAPESTRY_RELAUNCHED", "1");
  env.set("OMPI_MCA_odls_base_sigkill_timeout", "10");
  const Config c = Config::from_environment();
  CHECK(c.ranks == 4);
  CHECK(c.memory_per_rank == 1048576);
  CHECK(c.verify);
  CHECK(c.threads == 3);
  CHECK(c.device == "sim");
  CHECK_FALSE(c.device_peers);
  CHECK(c.local_rank == 5);
  CHECK(c.local_ranks == 8);
  CHECK(c.mpi_launched);
  CHECK(c.mpi_timeout_s == 2.5);
  CHECK(c.fault == "2:1:oom");
  CHECK(c.io_fault_rank == 3);
  CHECK(c.launch.path == "/opt/mpi/bin");
  CHECK(c.launch.relaunched);
  CHECK(c.launch.sigkill_timeout_set);
}

TEST_CASE("engine.session.config.local_rank_prefers_open_mpi") {
  Env env;
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "3");
  env.set("MPI_LOCALRANKID", "1");
  env.set("SLURM_LOCALID", "2");
  CHECK(Config::from_environment().local_rank == 3);
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", std::nullopt);
  CHECK(Config::from_environment().local_rank == 1);
}

TEST_CASE("engine.session.config.values_that_do_not_parse_keep_the_default") {
  Env env;
  env.set("TAPESTRY_RANKS", "0");
  env.set("TAPESTRY_MEMORY_PER_RANK", "-5");
  env.set("TAPESTRY_VERIFY", "yes");
  env.set("TAPESTRY_THREADS", "4x");
  env.set("TAPESTRY_MPI_TIMEOUT", "-1");
  env.set("TAPESTRY_IO_FAULT", "");
  env.set("TAPESTRY_DEVICE_PEERS", "1");
  const Config c = Config::from_environment();
  CHECK(c.ranks == 1);
  CHECK(c.memory_per_rank == 0);
  CHECK_FALSE(c.verify);
  CHECK(c.threads == 0);
  CHECK(c.mpi_timeout_s == 300);
  CHECK(c.io_fault_rank == -1);
  CHECK(c.device_peers);
}

// TAPESTRY_MEMORY_PER_RANK reads K/M/G as --memory-per-rank does (it was read as plain bytes:
// "100M" gave 100).
TEST_CASE("engine.session.config.memory_per_rank_suffixes") {
  Env env;
  for (const auto& [text, bytes] : std::vector<std::pair<const char*, int64_t>>{{"100M", int64_t{100} << 20},
                                                                                {"4K", 4096},
                                                                                {"2G", int64_t{2} << 30},
                                                                                {"3g", int64_t{3} << 30},
                                                                                {"1048576", 1048576},
                                                                                {"5X", 0},
                                                                                {"-1M", 0},
                                                                                {"M", 0},
                                                                                {"99999999999G", 0},
                                                                                {"", 0}}) {
    CAPTURE(text);
    env.set("TAPESTRY_MEMORY_PER_RANK", text);
    CHECK(Config::from_environment().memory_per_rank == bytes);
  }
}

// TAPESTRY_RATES=builtin pins the documented rates; the cache folder follows XDG, then HOME.
TEST_CASE("engine.session.config.rates_and_cache_dir") {
  Env env;
  env.set("TAPESTRY_RATES", std::nullopt);
  env.set("XDG_CACHE_HOME", std::nullopt);
  env.set("HOME", "/home/ada");
  Config c = Config::from_environment();
  CHECK(!c.builtin_rates);
  CHECK(c.cache_dir == "/home/ada/.cache/tapestry");
  env.set("TAPESTRY_RATES", "builtin");
  env.set("XDG_CACHE_HOME", "/var/cache/ada");
  c = Config::from_environment();
  CHECK(c.builtin_rates);
  CHECK(c.cache_dir == "/var/cache/ada/tapestry");
  env.set("XDG_CACHE_HOME", "relative");  // XDG: a relative path is ignored
  env.set("HOME", std::nullopt);
  CHECK(Config::from_environment().cache_dir.empty());
}
