// The Lua side of `tapestry serve`. Lua runs on this (the main) thread only, which is also the
// thread MPI and the engine expect; the network thread just queues jobs and sets flags. A chunk
// follows the shell's rules (repl/shell.cpp): "return <chunk>" first so an expression prints, an
// incomplete chunk is answered "incomplete" and the client sends it again with more lines.
#include "repl/serve.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/run/evaluator.hpp"
#include "engine/session/session.hpp"
#include "engine/telemetry/progress.hpp"
#include "lang/state_context.hpp"
#include "repl/cancellable_match.hpp"
#include "repl/cli.hpp"
#include "repl/commands.hpp"
#include "repl/complete.hpp"
#include "repl/line_reader.hpp"
#include "repl/listener.hpp"
#include "repl/output_capture.hpp"
#include "repl/progress_bar.hpp"
#include "repl/run.hpp"
#include "repl/shell.hpp"
#include "repl/shell_env.hpp"
#include "repl/token.hpp"

namespace tapestry::repl {

namespace {

constexpr const char* kChunkName = "=stdin";  // the local shell's, so messages read the same

// Set from the network thread when the running chunk must stop; a count hook turns it into a
// Lua error at the next check, so a pure Lua loop stops as well as an evaluation. It stays set
// until the chunk ends, and the hook then checks every instruction, so a chunk that catches the
// error with pcall and goes on is stopped again at its next instruction outside the pcall.
std::atomic<bool> g_stop_lua{false};

void cancel_hook(lua_State* L, lua_Debug*) {
  if (!g_stop_lua.load()) return;
  lua_sethook(L, cancel_hook, LUA_MASKCOUNT, 1);
  luaL_error(L, "interrupted!");
}

// debug.sethook would replace the cancel hook (Lua keeps one hook per thread), and a hook
// function runs with hooks off, where nothing could stop it: in a served session it is refused.
int refuse_sethook(lua_State* L) {
  return luaL_error(L,
                    "debug.sethook is not available under tapestry serve (the server's cancel hook uses it)");
}

void sandbox_debug_hooks(lua_State* L) {
  lua_getglobal(L, "debug");
  if (lua_istable(L, -1)) {
    lua_pushcfunction(L, refuse_sethook);
    lua_setfield(L, -2, "sethook");
  }
  lua_pop(L, 1);
}

bool incomplete(lua_State* L, int status) {
  if (status != LUA_ERRSYNTAX) return false;
  size_t len = 0;
  const char* msg = lua_tolstring(L, -1, &len);
  return msg != nullptr && std::string_view(msg, len).ends_with("<eof>");
}

bool is_command(std::string_view line) {
  size_t i = line.find_first_not_of(" \t");
  return i != std::string_view::npos && line[i] == ':' && line.substr(i + 1, 1) != ":";
}

// Pops the error on top of the stack as text, as report() would print it.
std::string pop_message(lua_State* L, int status) {
  std::string msg = "internal error: a C++ exception escaped a Lua binding";
  if (status >= LUA_OK && status <= LUA_ERRFILE) {
    size_t len = 0;
    const char* s = lua_tolstring(L, -1, &len);
    msg = s != nullptr ? std::string(s, len) : "(error object is not a string)";
  }
  lua_pop(L, 1);
  return msg;
}

struct Outcome {
  bool failed = false;      // an Error frame ends the chunk
  bool incomplete = false;  // the chunk needs more lines
  std::string message;      // the error; empty when it was already printed (to stderr)
};

Outcome evaluate(Shell& sh, const std::string& chunk) {
  lua_State* L = sh.L;
  const int errors_before = sh.errors;
  if (is_command(chunk)) {
    try {
      run_command(sh, chunk);
    } catch (const std::exception& e) {  // a bug in a command must not end the server
      print_error("tapestry", std::string("internal error in ") + chunk + ": " + e.what());
      ++sh.errors;
    }
    sh.quit = false;  // :quit is the client's to act on
    return {sh.errors > errors_before, false, {}};
  }
  std::string_view expr =
      std::string_view(chunk).starts_with("=") ? std::string_view(chunk).substr(1) : chunk;
  const std::string ret = "return " + std::string(expr) + ";";
  int status = luaL_loadbuffer(L, ret.data(), ret.size(), kChunkName);
  if (status != LUA_OK) {
    lua_pop(L, 1);
    status = luaL_loadbuffer(L, chunk.data(), chunk.size(), kChunkName);
    if (incomplete(L, status)) {
      lua_pop(L, 1);
      return {false, true, {}};
    }
    if (status != LUA_OK) return {true, false, pop_message(L, status)};
  }
  const int base = lua_gettop(L);
  status = docall(L, 0, LUA_MULTRET);
  if (status != LUA_OK) {
    Outcome o{true, false, pop_message(L, status)};
    lua_settop(L, base - 1);
    return o;
  }
  print_values(sh, base);  // computes tensors; a failure there is reported on (captured) stderr
  lua_settop(L, base - 1);
  return {sh.errors > errors_before, false, {}};
}

void run_chunk(Shell& sh, Listener& net, const Job& job) {
  const uint64_t client = job.client;
  Outcome o;
  try {
    OutputCapture capture([&net, client](OutputStream s, std::string_view text) {
      net.send(client, encode_frame(FrameType::Output, output_payload(s, text)));
    });
    o = evaluate(sh, job.text);
  } catch (const std::runtime_error& e) {  // only OutputCapture throws this: nothing ran
    o = {true, false, e.what()};
  }
  if (o.failed) net.send(client, encode_frame(FrameType::Error, o.message));
  else
    net.send(client, encode_frame(FrameType::Result,
                                  result_payload(o.incomplete ? ResultStatus::Incomplete : ResultStatus::Done,
                                                 prompt(sh.L))));
}

bool is_loopback(const std::string& host) { return host.starts_with("127.") || host == "::1"; }

// Written then renamed (repl/token.hpp), so a script polling for the file never reads half a
// number, and never through a link or into another user's file.
FileId write_port_file(const std::string& path, uint16_t port) {
  try {
    return write_private_file(path, std::to_string(port) + "\n", 0644);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("the port file: ") + e.what());
  }
}

// Tokens shorter than this get a warning: a generated one has 64 hex digits.
constexpr size_t kShortToken = 16;

// What the server wrote and removes when it stops, also when it must exit at once.
struct OwnFiles {
  std::string token_path, port_path;
  FileId token_id, port_id;
  void remove() const {
    if (!token_path.empty()) remove_own_file(token_path, token_id);
    if (!port_path.empty()) remove_own_file(port_path, port_id);
  }
};
OwnFiles g_files;

}  // namespace

bool parse_host_port(const std::string& text, std::string& host, uint16_t& port) {
  std::string p = text;
  if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    host = text.substr(0, colon);
    p = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host == "localhost") host = "127.0.0.1";
    if (host.empty()) return false;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (ec != std::errc() || end != p.data() + p.size() || p.empty() || value > 65535) return false;
  port = static_cast<uint16_t>(value);
  return true;
}

std::string parse_serve_args(std::span<const std::string> args, ServeOptions& o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= args.size()) return false;
      out = args[++i];
      return true;
    };
    std::string v;
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--listen") {
      if (!value(v) || !parse_host_port(v, o.host, o.port))
        return "'--listen' needs HOST:PORT, e.g. --listen 127.0.0.1:7181";
    } else if (a == "--token") {
      if (!value(o.token) || o.token.empty()) return "'--token' needs a token";
    } else if (a == "--token-file") {
      if (!value(o.token_file) || o.token_file.empty()) return "'--token-file' needs a path";
    } else if (a == "--port-file") {
      if (!value(o.port_file) || o.port_file.empty()) return "'--port-file' needs a path";
    } else if (a == "-n") {
      auto [end, ec] = value(v) ? std::from_chars(v.data(), v.data() + v.size(), o.ranks)
                                : std::from_chars_result{nullptr, std::errc::invalid_argument};
      if (ec != std::errc() || end != v.data() + v.size() || o.ranks < 1)
        return "'-n' needs a positive number of ranks: serve -n 4";
    } else {
      return "serve: unrecognized argument '" + a + "'";
    }
  }
  return {};
}

std::string serve_usage_text() {
  return "usage: tapestry serve [--listen HOST:PORT] [--token TOKEN | --token-file PATH]\n"
         "                      [--port-file PATH] [-n N]\n"
         "Keeps one Tapestry session (one tp.env) and lets `tapestry connect` shells in.\n"
         "  --listen HOST:PORT  where to listen (default 127.0.0.1:7181; PORT 0: any free port)\n"
         "  --token TOKEN       the token clients must give (default: $TAPESTRY_TOKEN, else a\n"
         "                      new random one written to the token file)\n"
         "  --token-file PATH   where a new token is written, mode 0600\n"
         "                      (default ~/.tapestry/serve.token)\n"
         "  --port-file PATH    write the port there once listening\n"
         "  -n N                run on N ranks (restarts under mpirun, as tapestry -n)\n"
         "A token lets its holder run any Lua code as this user: keep the default loopback\n"
         "address and reach it from elsewhere with ssh -L. SIGINT or SIGTERM stops the server.\n";
}

int prepare_serve(std::span<const std::string> args, ServeOptions& o) {
  if (std::string err = parse_serve_args(args, o); !err.empty()) {
    fprintf(stderr, "tapestry: %s\n%s", err.c_str(), serve_usage_text().c_str());
    return 2;
  }
  if (!o.help) return -1;
  fputs(serve_usage_text().c_str(), stdout);
  return 0;
}

int serve(lua_State* L, const ServeOptions& o) {
  std::string token = o.token;
  if (token.empty()) token = shell_env().token;
  const bool generate = token.empty();
  std::string token_path;
  if (generate) {
    token_path = o.token_file.empty() ? default_token_path() : o.token_file;
    if (token_path.empty()) {
      print_error("tapestry", "serve: no $HOME for the token file; give --token-file or --token");
      return 1;
    }
    try {
      token = new_token();
    } catch (const std::runtime_error& e) {
      print_error("tapestry", std::string("serve: ") + e.what());
      return 1;
    }
  } else if (token.size() < kShortToken) {
    print_error("tapestry", "warning: the token has " + std::to_string(token.size()) + " characters; use " +
                                std::to_string(kShortToken) +
                                " or more (a generated one has 64): a short token can be guessed");
  }

  // A chunk that reads stdin must not steal the server's terminal; log lines keep going to the
  // real stderr while a chunk's stderr goes to its client.
  if (const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); null_fd >= 0) {
    dup2(null_fd, STDIN_FILENO);
    close(null_fd);
  }
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error code, not a death
  const int log_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);

  ListenerOptions lo;
  lo.host = o.host;
  lo.port = o.port;
  lo.token = token;
  lo.hello = prompt(L) + "\n" + version_text() + " on " + LUA_RELEASE + ", served by pid " +
             std::to_string(getpid()) + ". Type :help for help, Ctrl-D to leave.";
  Telemetry& telemetry = session_of(L).telemetry();
  lo.cancel_running = [&telemetry] {
    g_stop_lua = true;
    telemetry.request_cancel();
  };
  // A chunk stuck where nothing can stop it (a long C call) must not keep a stopping server up.
  lo.force_exit = [] {
    g_files.remove();
    static const char msg[] = "tapestry serve: the running chunk did not stop; exiting\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(0);
  };
  lo.log_fd = log_fd;
  std::optional<Listener> net;
  try {
    net.emplace(std::move(lo));  // bound before any file is written: a second server that
                                 // cannot bind leaves the running one's token file alone
    if (generate) {
      g_files.token_id = write_token_file(token_path, token);
      g_files.token_path = token_path;
    }
    if (!o.port_file.empty()) {
      g_files.port_id = write_port_file(o.port_file, net->port());
      g_files.port_path = o.port_file;
    }
  } catch (const std::runtime_error& e) {
    print_error("tapestry", std::string("serve: ") + e.what());
    net.reset();
    g_files.remove();
    close(log_fd);
    return 1;
  }
  if (!is_loopback(o.host))
    print_error("tapestry", "warning: listening on " + o.host +
                                ", not loopback: anyone who can reach it and has the token can run "
                                "code as you (prefer ssh -L to a loopback server)");
  printf("listening on %s\n", net->address().c_str());
  if (generate) printf("token in %s\n", token_path.c_str());
  fflush(stdout);

  sandbox_debug_hooks(L);
  install_cancellable_match(L, &g_stop_lua);
  LineReader input(false);  // commands may remember history: a plain reader keeps none
  Shell sh{L, input};
  Environment& env = session_of(L).env();
  // Each client sees the progress of its own chunks: the bar's lines go to the running one.
  std::atomic<uint64_t> running_client{0};
  const std::unique_ptr<ProgressListener> bar =
      make_progress_bar([&net, &running_client](std::string_view line) {
        if (net) net->send(running_client, encode_frame(FrameType::Progress, line));
      });
  telemetry.progress_listener = bar.get();
  while (std::optional<Job> job = net->next_job()) {
    g_stop_lua = false;
    telemetry.clear_cancel();
    lua_sethook(L, cancel_hook, LUA_MASKCOUNT, 1000);
    // Bindings are this client's while its job runs; one of theirs that failed in another
    // client's observation is told to them now.
    env.set_author(static_cast<int>(job->client));
    if (job->kind == FrameType::Chunk)
      for (const Environment::Failure& f : env.take_failures(static_cast<int>(job->client)))
        net->send(job->client,
                  encode_frame(FrameType::Output,
                               output_payload(OutputStream::Stderr, "tapestry: " + f.message + "\n")));
    if (job->cancelled) {
      net->send(job->client, encode_frame(FrameType::Error, "evaluation cancelled before it started"));
    } else if (job->kind == FrameType::Complete) {
      std::string words;
      for (const std::string& w : completions(L, job->text)) words += (words.empty() ? "" : "\n") + w;
      net->send(job->client, encode_frame(FrameType::Complete, words));
    } else {
      running_client = job->client;
      run_chunk(sh, *net, *job);
    }
    env.set_author(0);
    net->done();
  }
  lua_sethook(L, nullptr, 0, 0);
  telemetry.progress_listener = nullptr;
  net.reset();
  g_files.remove();
  g_files = OwnFiles{};
  close(log_fd);
  printf("server stopped\n");
  return 0;
}

}  // namespace tapestry::repl
