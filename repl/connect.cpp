// The client is plain blocking POSIX sockets and poll(2): it has one conversation at a time,
// so Asio (and its compile time) stays in the server. While a chunk runs, Ctrl-C writes to a
// self-pipe that the wait polls next to the socket, and becomes a Cancel frame.
#include "repl/connect.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "repl/complete.hpp"
#include "repl/line_reader.hpp"
#include "repl/progress_bar.hpp"
#include "repl/protocol.hpp"
#include "repl/run.hpp"
#include "repl/serve.hpp"
#include "repl/shell.hpp"
#include "repl/shell_env.hpp"
#include "repl/token.hpp"

namespace tapestry::repl {

namespace {

constexpr const char* kProgname = "tapestry";
constexpr int kLoginTimeoutMs = 15000;
constexpr int kCompletionTimeoutMs = 2000;

class Connection {
 public:
  enum class Got { Frame, Timeout, Woken, Closed, Bad };

  ~Connection() {
    if (fd_ >= 0) close(fd_);
  }

  // "" when connected, else why not.
  std::string open(const std::string& host, uint16_t port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
      return "cannot resolve '" + host + "': " + gai_strerror(rc);
    std::string why = "no address for '" + host + "'";
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      fd_ = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd_ < 0) continue;
      if (connect(fd_, a->ai_addr, a->ai_addrlen) == 0) break;
      why = std::string("cannot connect to ") + host + ":" + service + ": " + std::strerror(errno);
      close(fd_);
      fd_ = -1;
    }
    freeaddrinfo(found);
    return fd_ >= 0 ? "" : why;
  }

  bool send(FrameType type, std::string_view payload = {}) {
    const std::string bytes = encode_frame(type, payload);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // The next frame, waiting up to timeout_ms (-1: for ever) or until wake_fd is readable.
  Got receive(Frame& f, int timeout_ms, int wake_fd = -1) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      DecodeResult r = decoder_.next();
      if (r.status == DecodeStatus::Ok) {
        f = std::move(r.frame);
        return Got::Frame;
      }
      if (r.status == DecodeStatus::Error) return Got::Bad;
      int wait = -1;
      if (timeout_ms >= 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) return Got::Timeout;
        wait = static_cast<int>(left.count());
      }
      pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
      const int ready = poll(fds, wake_fd >= 0 ? 2 : 1, wait);
      if (ready < 0 && errno == EINTR) continue;  // the wake pipe says whether it was Ctrl-C
      if (ready < 0) return Got::Closed;
      if (ready == 0) return Got::Timeout;
      if (wake_fd >= 0 && (fds[1].revents & POLLIN)) return Got::Woken;
      char buf[64 * 1024];
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Got::Closed;
      decoder_.feed(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  FrameDecoder decoder_;
};

// Ctrl-C while a chunk runs: counted and written to a self-pipe the wait polls.
int g_wake[2] = {-1, -1};
volatile sig_atomic_t g_presses = 0;

void on_sigint(int) {
  g_presses = g_presses + 1;
  int saved = errno;
  ssize_t ignored = write(g_wake[1], "!", 1);
  (void)ignored;
  errno = saved;
}

// Installs on_sigint for the life of the object (a chunk's wait), restoring what was there.
class CancelOnCtrlC {
 public:
  CancelOnCtrlC() {
    g_presses = 0;
    struct sigaction action = {};
    action.sa_handler = on_sigint;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~CancelOnCtrlC() { sigaction(SIGINT, &previous_, nullptr); }
  CancelOnCtrlC(const CancelOnCtrlC&) = delete;
  CancelOnCtrlC& operator=(const CancelOnCtrlC&) = delete;

 private:
  struct sigaction previous_ = {};
};

bool g_bar_shown = false;  // a progress line is on stderr

// Progress frames, drawn as the local bar is (when it would be drawn here).
void show_progress(std::string_view line) {
  static const bool wanted = progress_wanted(isatty(STDOUT_FILENO) != 0);
  if (!wanted || (line.empty() && !g_bar_shown)) return;
  show_progress_line(line);
  g_bar_shown = !line.empty();
}

void write_output(std::string_view payload) {
  if (payload.empty()) return;
  show_progress("");
  FILE* out = payload[0] == static_cast<char>(OutputStream::Stderr) ? stderr : stdout;
  if (out == stderr) fflush(stdout);
  fwrite(payload.data() + 1, 1, payload.size() - 1, out);
  fflush(out);
}

enum class Reply { Done, Incomplete, Failed, Lost };

// Shows a chunk's output until its Result or Error; Ctrl-C sends Cancel.
Reply wait_reply(Connection& c, std::string& prompt_text) {
  CancelOnCtrlC armed;
  Frame f;
  for (;;) {
    switch (c.receive(f, -1, g_wake[0])) {
      case Connection::Got::Woken: {
        char drain[64];
        while (read(g_wake[0], drain, sizeof drain) > 0) {
        }
        if (g_presses >= 3) {
          print_error(kProgname, "the server does not stop the chunk; leaving");
          return Reply::Lost;
        }
        c.send(FrameType::Cancel);
        continue;
      }
      case Connection::Got::Frame: break;
      case Connection::Got::Bad:
        print_error(kProgname, "the server sent a malformed frame");
        return Reply::Lost;
      default: print_error(kProgname, "the server closed the connection"); return Reply::Lost;
    }
    switch (f.type) {
      case FrameType::Output: write_output(f.payload); break;
      case FrameType::Progress: show_progress(f.payload); break;
      case FrameType::Error:
        show_progress("");
        if (!f.payload.empty()) print_error("", f.payload);
        return Reply::Failed;
      case FrameType::Result:
        show_progress("");
        if (f.payload.size() > 1) prompt_text = f.payload.substr(1);
        return !f.payload.empty() && f.payload[0] == static_cast<char>(ResultStatus::Incomplete)
                   ? Reply::Incomplete
                   : Reply::Done;
      case FrameType::Bye: print_error(kProgname, "the server is stopping"); return Reply::Lost;
      default: break;  // a late completion answer
    }
  }
}

std::vector<std::string> remote_completions(Connection& c, std::string_view word) {
  std::vector<std::string> words;
  if (!c.send(FrameType::Complete, word)) return words;
  Frame f;
  while (c.receive(f, kCompletionTimeoutMs) == Connection::Got::Frame) {
    if (f.type != FrameType::Complete) continue;
    for (size_t start = 0; start < f.payload.size();) {
      size_t nl = f.payload.find('\n', start);
      if (nl == std::string::npos) nl = f.payload.size();
      words.push_back(f.payload.substr(start, nl - start));
      start = nl + 1;
    }
    break;
  }
  return words;
}

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// The read-eval-print loop, with the evaluation over there. Returns the exit status.
int remote_shell(Connection& c, std::string prompt_text, const std::string& banner) {
  const bool terminal = isatty(STDIN_FILENO) != 0;
  LineReader input(terminal);
  if (terminal) {
    printf("%s\n", banner.c_str());
    fflush(stdout);
    install_completer([&c](std::string_view word) { return remote_completions(c, word); });
  }
  int errors = 0;
  bool lost = false;
  std::string line;
  while (!lost) {
    LineReader::Status got = input.read(prompt_text.c_str(), line);
    if (got == LineReader::Status::End) break;
    if (got == LineReader::Status::Interrupted) continue;
    if (trim(line) == ":quit") {
      input.remember(line);
      break;
    }
    std::string chunk = line;
    for (;;) {
      if (!c.send(FrameType::Chunk, chunk)) {
        print_error(kProgname, "the server closed the connection");
        lost = true;
        break;
      }
      const Reply r = wait_reply(c, prompt_text);
      if (r == Reply::Lost) {
        lost = true;
        break;
      }
      if (r != Reply::Incomplete) {
        input.remember(chunk);
        errors += r == Reply::Failed;
        break;
      }
      std::string more;
      got = input.read(kContinuationPrompt, more);
      if (got == LineReader::Status::Interrupted) break;  // Ctrl-C drops the whole chunk
      if (got == LineReader::Status::End) {
        print_error(kProgname, "input ended inside an incomplete chunk");
        ++errors;
        break;
      }
      chunk += '\n';
      chunk += more;
    }
  }
  if (terminal) install_completer({});
  if (!lost) c.send(FrameType::Bye);
  if (lost) return 1;
  return !terminal && errors > 0 ? 1 : 0;
}

}  // namespace

std::string parse_connect_args(std::span<const std::string> args, ConnectOptions& o) {
  bool have_address = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= args.size()) return false;
      out = args[++i];
      return !out.empty();
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--token") {
      if (!value(o.token)) return "'--token' needs a token";
    } else if (a == "--token-file") {
      if (!value(o.token_file)) return "'--token-file' needs a path";
    } else if (!a.starts_with("-") && !have_address) {
      if (!parse_host_port(a, o.host, o.port) || o.host.empty() || a.find(':') == std::string::npos)
        return "connect: '" + a + "' is not HOST:PORT";
      have_address = true;
    } else {
      return "connect: unrecognized argument '" + a + "'";
    }
  }
  if (!have_address && !o.help) return "connect needs HOST:PORT, e.g. tapestry connect 127.0.0.1:7181";
  return {};
}

std::string connect_usage_text() {
  return "usage: tapestry connect HOST:PORT [--token TOKEN | --token-file PATH]\n"
         "Opens the shell on a `tapestry serve` session: the same editing, history and\n"
         "completion, with the chunks running (and tp.env living) in the server.\n"
         "  --token TOKEN      the server's token (default: $TAPESTRY_TOKEN, else the file)\n"
         "  --token-file PATH  read the token from PATH (default ~/.tapestry/serve.token)\n"
         "Ctrl-C cancels the running chunk; Ctrl-D or :quit leaves (the server goes on).\n";
}

int connect_main(const ConnectOptions& o) {
  std::string token = o.token;
  if (token.empty()) token = shell_env().token;
  if (token.empty()) {
    const std::string path = o.token_file.empty() ? default_token_path() : o.token_file;
    try {
      token = read_token_file(path);
    } catch (const std::runtime_error& e) {
      print_error(kProgname, std::string(e.what()) + " (give --token or --token-file)");
      return 1;
    }
  }
  if (pipe2(g_wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    print_error(kProgname, std::string("cannot make a pipe: ") + std::strerror(errno));
    return 1;
  }
  Connection c;
  if (std::string why = c.open(o.host, o.port); !why.empty()) {
    print_error(kProgname, why);
    return 1;
  }
  Frame hello;
  const bool sent = c.send(FrameType::Auth, token);
  const Connection::Got got = sent ? c.receive(hello, kLoginTimeoutMs) : Connection::Got::Closed;
  if (got != Connection::Got::Frame || hello.type != FrameType::Hello) {
    if (got == Connection::Got::Frame && hello.type == FrameType::Error)
      print_error(kProgname, "the server refused the connection: " + hello.payload);
    else print_error(kProgname, "no greeting from the server at " + o.host + ":" + std::to_string(o.port));
    return 1;
  }
  const size_t nl = hello.payload.find('\n');
  const std::string prompt_text = hello.payload.substr(0, nl);
  const std::string banner = nl == std::string::npos ? "" : hello.payload.substr(nl + 1);
  return remote_shell(c, prompt_text, banner);
}

int connect_command(std::span<const std::string> args) {
  ConnectOptions o;
  if (std::string err = parse_connect_args(args, o); !err.empty()) {
    fprintf(stderr, "%s: %s\n%s", kProgname, err.c_str(), connect_usage_text().c_str());
    return 2;
  }
  if (o.help) {
    fputs(connect_usage_text().c_str(), stdout);
    return 0;
  }
  return connect_main(o);
}

}  // namespace tapestry::repl
