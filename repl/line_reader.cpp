// libedit's readline emulation when stdin is a terminal, getline(3) on stdin otherwise:
// from a pipe, a chunk that calls io.read() reads the lines that follow it, as in lua.c.
#include "repl/line_reader.hpp"

#include <editline/readline.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "repl/shell_env.hpp"

namespace tapestry::repl {

namespace {

// Ctrl-C at the prompt drops the line. The handler sets a flag and writes a byte to a
// self-pipe; our getc function polls the terminal and the pipe, so readline() returns
// at once whichever thread the kernel gave the signal to (OpenBLAS and the engine have
// threads), and no EINTR retry inside libedit can swallow it.
volatile sig_atomic_t g_prompt_interrupted = 0;
volatile sig_atomic_t g_resized = 0;
int g_wake[2] = {-1, -1};

void wake_reader() {
  int saved = errno;
  ssize_t ignored = write(g_wake[1], "!", 1);  // non-blocking: a full pipe is awake anyway
  (void)ignored;
  errno = saved;
}

void on_prompt_sigint(int) {
  g_prompt_interrupted = 1;
  wake_reader();
}

// libedit's own signal handling is off (see the constructor), so a resize is ours too.
void on_sigwinch(int) {
  g_resized = 1;
  wake_reader();
}

int interruptible_getc(FILE* in) {
  const int fd = fileno(in);
  for (;;) {
    if (g_prompt_interrupted) return EOF;
    pollfd fds[2] = {{fd, POLLIN, 0}, {g_wake[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return EOF;
    }
    if (fds[1].revents & POLLIN) {
      char drain[64];
      while (read(g_wake[0], drain, sizeof drain) > 0) {
      }
      if (g_resized) {
        g_resized = 0;
        rl_resize_terminal();
      }
      continue;
    }
    if (fds[0].revents != 0) {
      unsigned char c = 0;
      ssize_t n = read(fd, &c, 1);
      if (n == 1) return c;
      if (n < 0 && errno == EINTR) continue;
      return EOF;
    }
  }
}

void install(int sig, void (*handler)(int), struct sigaction* previous) {
  struct sigaction action = {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  sigaction(sig, &action, previous);
}

}  // namespace

std::string LineReader::history_path() {
  const ShellEnv& e = shell_env();
  if (e.history) return *e.history;
  if (e.home && !e.home->empty()) return *e.home + "/.tapestry_history";
  return {};
}

LineReader::LineReader(bool terminal) : terminal_(terminal) {
  if (!terminal_ || pipe2(g_wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    terminal_ = false;  // (no pipe: read plainly rather than hang on Ctrl-C)
    return;
  }
  rl_readline_name = "tapestry";  // for "tapestry:" conditionals in ~/.editrc
  // libedit's own handlers re-raise a signal with kill(0, sig) from whichever thread
  // got it and rely on a second EINTR; with engine threads about, that lost Ctrl-C or
  // ended the process. So it handles no signal, and reads through our getc.
  rl_catch_signals = 0;
  rl_getc_function = interruptible_getc;
  // For the whole session, not just inside readline(): a Ctrl-C typed while results
  // print or between prompts must not end the process (docall arms its own handler).
  install(SIGINT, on_prompt_sigint, &previous_sigint_);
  install(SIGWINCH, on_sigwinch, &previous_sigwinch_);
  using_history();
  stifle_history(1000);
  history_file_ = history_path();
  if (!history_file_.empty()) {
    read_history(history_file_.c_str());
    if (HIST_ENTRY* e = history_get(history_base + history_length - 1); e && e->line) last_ = e->line;
  }
}

LineReader::~LineReader() {
  if (!terminal_) return;
  sigaction(SIGINT, &previous_sigint_, nullptr);
  sigaction(SIGWINCH, &previous_sigwinch_, nullptr);
  close(g_wake[0]);
  close(g_wake[1]);
  g_wake[0] = g_wake[1] = -1;
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
