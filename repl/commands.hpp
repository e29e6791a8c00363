// The shell's own commands, the lines that start with ':'. One table holds them all;
// their usage and doc text live in the API registry (lang/api.hpp, kind Command).
//   run_command(shell, ":help tp.zeros");   // prints the usage and doc
//   run_command(shell, ":load setup.lua");  // runs the script in the session
//   for (const Command& c : commands()) ...  // c.name == ":help", ...
#pragma once

#include <span>
#include <string_view>

namespace tapestry::repl {

struct Shell;

struct Command {
  std::string_view name;     // ":help"
  std::string_view usage;    // ":help [name]"; the registry's text wins when present
  std::string_view summary;  // one line for the :help overview, ditto
  void (*run)(Shell& shell, std::string_view args);
};

std::span<const Command> commands();
const Command* find_command(std::string_view name);  // ":load" (or "load")

// Runs a ':' line. An unknown command or a failing one is reported on stderr and
// counted in shell.errors; the session goes on either way.
void run_command(Shell& shell, std::string_view line);

}  // namespace tapestry::repl
