// The shell's input: from a terminal through libedit (line editing, history kept in
// a file across sessions), or from a pipe or file with plain getline and no prompt.
//   LineReader in(isatty(STDIN_FILENO));
//   std::string line;
//   while (in.read("tapestry> ", line) != LineReader::Status::End) { ... in.remember(chunk); }
#pragma once

#include <csignal>
#include <string>
#include <string_view>

namespace tapestry::repl {

class LineReader {
 public:
  enum class Status { Line, Interrupted, End };  // Interrupted: Ctrl-C dropped the line

  explicit LineReader(bool terminal);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool terminal() const { return terminal_; }
  // One line without its newline. The prompt is shown only on a terminal.
  Status read(const char* prompt, std::string& line);
  // Adds a chunk to the history (terminal only), skipping empty chunks and a repeat
  // of the previous entry, and saves the history file at once so that os.exit(),
  // a crash or a kill loses nothing.
  void remember(std::string_view chunk);

  // $TAPESTRY_HISTORY if set (empty: keep no history), else ~/.tapestry_history.
  static std::string history_path();

 private:
  bool terminal_;
  std::string history_file_;
  std::string last_;  // the newest history entry, to skip repeats
  struct sigaction previous_sigint_ = {};
  struct sigaction previous_sigwinch_ = {};
};

}  // namespace tapestry::repl
