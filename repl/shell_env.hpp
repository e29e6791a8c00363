// The shell's own environment variables, read once: the one place in repl/ that reads any.
//   const ShellEnv& e = shell_env();
//   if (e.home) path = *e.home + "/.tapestry_history";
// The engine's settings come from engine/session/config.hpp; docs/debug.md lists both.
#pragma once

#include <optional>
#include <string>

namespace tapestry::repl {

struct ShellEnv {
  std::optional<std::string> home;     // HOME: "~/" in paths, the default history and token files
  std::optional<std::string> history;  // TAPESTRY_HISTORY: the history file ("": keep none)
  std::string token;                   // TAPESTRY_TOKEN: serve's and connect's, when no flag gives one
  std::optional<bool> progress;        // TAPESTRY_PROGRESS: 1 forces the progress bar, 0 turns it off
  std::string exit_file;               // TAPESTRY_EXIT_FILE: where rank 0 leaves its status for tapestry -n
  std::string tmpdir = "/tmp";         // TMPDIR: where tapestry -n makes that file
};

const ShellEnv& shell_env();

}  // namespace tapestry::repl
