// libedit's readline emulation when stdin is a terminal, getline(3) otherwise. Input
// goes through C stdio in both cases, so a chunk that calls io.read() reads the lines
// that follow it, as in lua.c.
#include "repl/line_reader.hpp"

#include <editline/readline.h>
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace tapestry::repl {

namespace {

volatile sig_atomic_t g_prompt_interrupted = 0;
pthread_t g_reader_thread;

// At the prompt Ctrl-C only drops the line: readline() returns NULL (the read is
// interrupted, as no SA_RESTART is set), and the flag tells that apart from Ctrl-D.
// The kernel may hand the signal to an engine worker thread; it must interrupt the
// read on the reading thread, so it is passed on there.
void on_prompt_sigint(int sig) {
  if (!pthread_equal(pthread_self(), g_reader_thread)) {
    pthread_kill(g_reader_thread, sig);
    return;
  }
  g_prompt_interrupted = 1;
}

}  // namespace

std::string LineReader::history_path() {
  if (const char* p = std::getenv("TAPESTRY_HISTORY")) return p;
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.tapestry_history";
  return {};
}

LineReader::LineReader(bool terminal) : terminal_(terminal) {
  if (!terminal_) return;
  // For the whole session, not just inside readline(): a Ctrl-C typed while results
  // print or between prompts must not end the process (docall arms its own handler).
  g_reader_thread = pthread_self();
  struct sigaction action = {};
  action.sa_handler = on_prompt_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_sigint_);
  rl_readline_name = "tapestry";  // for "tapestry:" conditionals in ~/.editrc
  using_history();
  stifle_history(1000);
  history_file_ = history_path();
  if (!history_file_.empty()) {
    read_history(history_file_.c_str());
    if (HIST_ENTRY* e = history_get(history_base + history_length - 1); e && e->line)
      last_ = e->line;
  }
}

LineReader::~LineReader() {
  if (terminal_) sigaction(SIGINT, &previous_sigint_, nullptr);
}

LineReader::Status LineReader::read(const char* prompt, std::string& line) {
  line.clear();
  if (!terminal_) {
    char* buf = nullptr;
    size_t cap = 0;
    ssize_t n = getline(&buf, &cap, stdin);
    if (n < 0) {
      std::free(buf);
      return Status::End;
    }
    if (n > 0 && buf[n - 1] == '\n') --n;
    line.assign(buf, static_cast<size_t>(n));
    std::free(buf);
    return Status::Line;
  }

  g_prompt_interrupted = 0;  // a press before the prompt showed is forgotten
  char* text = readline(prompt);
  if (g_prompt_interrupted) {
    std::free(text);
    fputs("^C\n", stdout);
    fflush(stdout);
    return Status::Interrupted;
  }
  if (text == nullptr) {
    fputs("\n", stdout);  // leave the terminal on a fresh line after Ctrl-D
    fflush(stdout);
    return Status::End;
  }
  line = text;
  std::free(text);
  return Status::Line;
}

void LineReader::remember(std::string_view chunk) {
  if (!terminal_ || chunk.find_first_not_of(" \t\r\n") == std::string_view::npos) return;
  if (chunk == last_) return;
  last_ = std::string(chunk);
  add_history(last_.c_str());
  if (!history_file_.empty()) write_history(history_file_.c_str());
}

}  // namespace tapestry::repl
