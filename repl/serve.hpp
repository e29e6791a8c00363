// `tapestry serve`: keeps one Lua state (one tp.env for everyone) and runs the chunks that
// authenticated shells send over TCP (repl/listener.hpp), one at a time, each chunk's output
// going back to the client that sent it. Under mpirun rank 0 serves; the others are workers.
//   ServeOptions o; std::string err = parse_serve_args({"--listen", "127.0.0.1:0"}, o);
//   if (!err.empty()) { ... usage error, exit 2 ... }
//   int status = serve(L, o);  // until SIGINT or SIGTERM
#pragma once

#include <cstdint>
#include <span>
#include <string>

struct lua_State;

namespace tapestry::repl {

inline constexpr uint16_t kDefaultServePort = 7181;

struct ServeOptions {
  std::string host = "127.0.0.1";     // loopback unless asked otherwise
  uint16_t port = kDefaultServePort;  // 0: any free port
  std::string token;                  // given with --token (else from $TAPESTRY_TOKEN, else generated)
  std::string token_file;             // where a generated token is written (default ~/.tapestry/serve.token)
  std::string port_file;              // if set, the bound port is written there (for scripts and tests)
  int ranks = 1;                      // -n N: restart under mpirun, as the shell's -n
  bool help = false;
};

// Parses the arguments after "serve". Returns a usage error, or "" when fine.
std::string parse_serve_args(std::span<const std::string> args, ServeOptions& options);

// Splits "HOST:PORT", "[V6]:PORT" or "PORT" (host left as is). Returns false when malformed.
bool parse_host_port(const std::string& text, std::string& host, uint16_t& port);

std::string serve_usage_text();

// For main(): parses `args`, printing a usage error or the --help text. Returns -1 to go on and
// serve, else the exit status (2 for a usage error, 0 after --help).
int prepare_serve(std::span<const std::string> args, ServeOptions& options);

// Serves until SIGINT or SIGTERM; returns the exit status (1 when it cannot listen).
int serve(lua_State* L, const ServeOptions& options);

}  // namespace tapestry::repl
