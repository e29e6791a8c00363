#include "engine/dist/salvage_watch.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "engine/dist/liveness.hpp"
#include "engine/ir/error.hpp"
#include "engine/store/shard_file.hpp"

namespace tapestry {

SalvageWatch::SalvageWatch(ShardStore& store, std::string dir, int rank, int driver_pid)
    : store_(store), dir_(std::move(dir)), rank_(rank), driver_pid_(driver_pid), thread_([this] { run(); }) {}

SalvageWatch::~SalvageWatch() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void SalvageWatch::watch_rank0(const std::string& pid_and_host) {
  std::lock_guard<std::mutex> lock(mu_);
  rank0_ = pid_and_host;
}

void SalvageWatch::run() {
  const std::string request = dir_ + "/salvage";
  Driver rank0;
  bool known = false;
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!known && rank_ != 0) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!rank0_.empty()) rank0.hello(rank0_), known = true;
    }
    std::error_code ec;
    const bool asked = std::filesystem::exists(request, ec);
    // Rank 0 gone while the driver lives: the driver will replace the job.
    const bool orphaned = known && rank0.gone() && driver_pid_ > 0 && kill(driver_pid_, 0) == 0;
    if (!asked && !orphaned) continue;
    if (orphaned)
      fprintf(stderr, "tapestry: rank %d: rank 0 (pid %d) is gone; this worker saves its pieces and exits\n",
              rank_, rank0.pid());
    try {
      salvage_store(store_, dir_, rank_);
    } catch (const std::exception& e) {
      fprintf(stderr, "tapestry: rank %d: %s\n", rank_, e.what());
    }
    done_ = true;
    if (rank_ != 0) _exit(1);  // the job is over; rank 0 still tells the driver
    return;
  }
}

void request_salvage(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (FILE* f = std::fopen((dir + "/salvage").c_str(), "w")) std::fclose(f);
}

std::vector<int> wait_salvaged(const std::string& dir, const std::vector<int>& ranks, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::vector<int> missing = ranks;
  for (;;) {
    std::vector<int> still;
    std::error_code ec;
    for (int r : missing)
      if (!std::filesystem::exists(cat_str(dir, "/w", r, ".done"), ec)) still.push_back(r);
    missing = std::move(still);
    if (missing.empty() || std::chrono::steady_clock::now() >= end) return missing;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace tapestry
