#include "repl/shell_env.hpp"

#include <cstdlib>

namespace tapestry::repl {

namespace {

std::optional<std::string> var(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

ShellEnv read_shell_env() {
  ShellEnv e;
  e.home = var("HOME");
  e.history = var("TAPESTRY_HISTORY");
  e.token = var("TAPESTRY_TOKEN").value_or("");
  e.exit_file = var("TAPESTRY_EXIT_FILE").value_or("");
  if (const auto t = var("TMPDIR"); t && !t->empty()) e.tmpdir = *t;
  if (const auto p = var("TAPESTRY_PROGRESS"); p && !p->empty()) e.progress = p->front() != '0';
  return e;
}

}  // namespace

const ShellEnv& shell_env() {
  static const ShellEnv e = read_shell_env();
  return e;
}

}  // namespace tapestry::repl
