#include "engine/dist/liveness.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "engine/ir/error.hpp"

namespace tapestry {

namespace {

using Clock = std::chrono::steady_clock;

const std::string& this_host() {
  static const std::string host = [] {
    char h[256] = "";
    gethostname(h, sizeof h - 1);
    return std::string(h);
  }();
  return host;
}

enum class State { Running, Stopped, Dead };

// Gone, or exited and not yet reaped by its launcher: Dead; SIGSTOPped: Stopped.
State process_state(int pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH ? State::Dead : State::Running;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return State::Running;
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return State::Running;
  const char s = line[close + 2];
  if (s == 'Z' || s == 'X') return State::Dead;
  return s == 'T' ? State::Stopped : State::Running;
}

bool parse(const std::string& pid_and_host, int& pid, std::string& host) {
  std::istringstream in(pid_and_host);
  return static_cast<bool>(in >> pid >> host) && pid > 0;
}

}  // namespace

std::string this_process() { return cat_str(getpid(), " ", this_host()); }

void Peers::hello(int rank, const std::string& pid_and_host) {
  if (rank <= 0 || rank >= static_cast<int>(pid_.size())) return;
  int pid = 0;
  std::string host;
  if (parse(pid_and_host, pid, host)) pid_[rank] = pid, host_[rank] = host;
}

int Peers::lost() {
  const auto now = Clock::now();
  if (now - last_ < std::chrono::milliseconds(100)) return 0;
  // Stopped time counts only while we watch: after a gap (rank 0 itself stopped by a Ctrl-Z of
  // the whole job, or idle at the prompt) a worker still resuming is not lost.
  if (now - last_ > std::chrono::seconds(1))
    std::fill(stopped_since_.begin(), stopped_since_.end(), Clock::time_point{});
  last_ = now;
  stopped_.resize(pid_.size());
  for (size_t w = 1; w < pid_.size(); ++w) {
    if (pid_[w] <= 0 || host_[w] != this_host()) continue;
    const State s = process_state(pid_[w]);
    if (s == State::Dead) return stopped_[w] = false, static_cast<int>(w);
    if (s == State::Running) {
      stopped_since_[w] = {};
      continue;
    }
    if (stopped_since_[w] == Clock::time_point{}) stopped_since_[w] = now;
    if (std::chrono::duration<double>(now - stopped_since_[w]).count() >= kStoppedGrace)
      return stopped_[w] = true, static_cast<int>(w);
  }
  return 0;
}

std::string Peers::describe(int rank) const {
  const bool stopped = rank < static_cast<int>(stopped_.size()) && stopped_[rank];
  return cat_str("rank ", rank, " (pid ", pid_[rank], " on ", host_[rank], ") ",
                 stopped ? cat_str("is stopped (SIGSTOP) for ", kStoppedGrace, " s and counts as lost")
                         : std::string("died"));
}

std::string Peers::obituary(int rank) const {
  return cat_str(describe(rank),
                 "; the MPI job cannot go on: restart tapestry (named tensors on the job are lost; "
                 "tp.save_env keeps them)");
}

bool Peers::down(int rank) const {
  if (rank <= 0 || rank >= static_cast<int>(pid_.size()) || pid_[rank] <= 0 || host_[rank] != this_host())
    return false;
  return process_state(pid_[rank]) != State::Running;
}

void Peers::kill_local() const {
  for (size_t w = 1; w < pid_.size(); ++w)
    if (pid_[w] > 0 && host_[w] == this_host()) kill(pid_[w], SIGKILL);
}

bool Peers::all_local() const {
  for (size_t w = 1; w < pid_.size(); ++w)
    if (pid_[w] <= 0 || host_[w] != this_host()) return false;
  return true;
}

void Driver::hello(const std::string& pid_and_host) {
  std::string host;
  if (parse(pid_and_host, pid_, host)) here_ = host == this_host();
}

bool Driver::gone() {
  if (!here_) return false;
  const auto now = Clock::now();
  if (now - last_ < std::chrono::milliseconds(100)) return false;
  last_ = now;
  return process_state(pid_) == State::Dead;
}

}  // namespace tapestry
