// Pipes rather than a temporary file so output streams to the client while a long chunk runs,
// and a reader thread so a chunk that prints more than a pipe holds does not block on itself.
#include "repl/output_capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tapestry::repl {

OutputCapture::OutputCapture(Sink sink) : sink_(std::move(sink)) {
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    for (int fd : {out[0], out[1], err[0], err[1]})
      if (fd >= 0) close(fd);
    throw std::runtime_error("cannot capture output: " + why);
  }
  fflush(stdout);
  fflush(stderr);
  saved_[0] = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  saved_[1] = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  dup2(out[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC: child processes write here too
  dup2(err[1], STDERR_FILENO);
  close(out[1]);
  close(err[1]);
  read_[0] = out[0];
  read_[1] = err[0];
  reader_ = std::thread([this] { pump(); });
}

OutputCapture::~OutputCapture() {
  fflush(stdout);
  fflush(stderr);
  dup2(saved_[0], STDOUT_FILENO);
  dup2(saved_[1], STDERR_FILENO);
  close(saved_[0]);
  close(saved_[1]);
  restored_ = true;
  reader_.join();
  close(read_[0]);
  close(read_[1]);
}

// Reads both pipes until both are at end of file; once the descriptors are restored, a pipe
// that stays quiet for 100 ms is finished too (a background child may hold its write end).
void OutputCapture::pump() {
  bool open[2] = {true, true};
  char buf[64 * 1024];
  while (open[0] || open[1]) {
    pollfd fds[2] = {{open[0] ? read_[0] : -1, POLLIN, 0}, {open[1] ? read_[1] : -1, POLLIN, 0}};
    const bool finishing = restored_.load();
    const int ready = poll(fds, 2, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready == 0 && finishing) break;
    for (int i = 0; i < 2; ++i) {
      if (!open[i] || fds[i].revents == 0) continue;
      const ssize_t n = read(read_[i], buf, sizeof buf);
      if (n > 0) {
        sink_(i == 0 ? OutputStream::Stdout : OutputStream::Stderr,
              std::string_view(buf, static_cast<size_t>(n)));
      } else if (n == 0 || errno != EINTR) {
        open[i] = false;
      }
    }
  }
}

}  // namespace tapestry::repl
