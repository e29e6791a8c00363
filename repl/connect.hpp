// `tapestry connect HOST:PORT`: the shell, attached to a `tapestry serve` session. Lines are
// read and edited here (history, completion answered by the server), chunks run there, and
// what they print comes back. Ctrl-C cancels the running chunk; Ctrl-D or :quit says bye.
//   std::string err = parse_connect_args({"127.0.0.1:7181", "--token-file", "t"}, o);
//   int status = connect_main(o);  // 0, or 1 when it could not connect or (piped) a chunk failed
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace tapestry::repl {

struct ConnectOptions {
  std::string host;
  uint16_t port = 0;
  std::string token;       // --token, else $TAPESTRY_TOKEN, else read from token_file
  std::string token_file;  // default ~/.tapestry/serve.token
  bool help = false;
};

// Parses the arguments after "connect". Returns a usage error, or "" when fine.
std::string parse_connect_args(std::span<const std::string> args, ConnectOptions& options);
std::string connect_usage_text();

int connect_main(const ConnectOptions& options);
// For main(): parses the arguments after "connect" (usage errors exit 2), then connect_main.
int connect_command(std::span<const std::string> args);

}  // namespace tapestry::repl
