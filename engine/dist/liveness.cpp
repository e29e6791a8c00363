#include "engine/dist/liveness.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "engine/ir/error.hpp"

namespace tapestry {

namespace {

std::string this_host() {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  return host;
}

// Gone, or exited and not yet reaped by its launcher.
bool process_dead(int pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

}  // namespace

void Peers::hello(int rank, const std::string& pid_and_host) {
  if (rank <= 0 || rank >= static_cast<int>(pid_.size())) return;
  std::istringstream in(pid_and_host);
  int pid = 0;
  std::string host;
  if (in >> pid >> host) pid_[rank] = pid, host_[rank] = host;
}

int Peers::dead() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(100)) return 0;
  last_ = now;
  static const std::string here = this_host();
  for (size_t w = 1; w < pid_.size(); ++w)
    if (pid_[w] > 0 && host_[w] == here && process_dead(pid_[w])) return static_cast<int>(w);
  return 0;
}

std::string Peers::obituary(int rank) const {
  return cat_str("rank ", rank, " (pid ", pid_[rank], " on ", host_[rank],
                 ") died; the MPI job cannot go on: restart tapestry (named tensors on the job are lost; "
                 "tp.save_env keeps them)");
}

}  // namespace tapestry
