// While one object lives, whatever the process writes to file descriptors 1 and 2 (Lua's print
// and io.write, the shell's commands, C++ code, child processes) goes to a function instead,
// as it is written, so `tapestry serve` can send a chunk's output to the client that sent it.
//   { OutputCapture c([&](OutputStream s, std::string_view text) { send(s, text); });
//     run_the_chunk(); }   // flushed and restored here; every byte has reached the sink
#pragma once

#include <atomic>
#include <functional>
#include <string_view>
#include <thread>

#include "repl/protocol.hpp"

namespace tapestry::repl {

class OutputCapture {
 public:
  using Sink = std::function<void(OutputStream stream, std::string_view text)>;

  // Throws std::runtime_error when the pipes cannot be made (then nothing is redirected).
  explicit OutputCapture(Sink sink);
  ~OutputCapture();
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

 private:
  void pump();  // the reader thread

  Sink sink_;
  int saved_[2] = {-1, -1};  // the real stdout and stderr
  int read_[2] = {-1, -1};   // our ends of the two pipes
  std::atomic<bool> restored_{false};
  std::thread reader_;
};

}  // namespace tapestry::repl
