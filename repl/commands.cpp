// The ':' commands. To add one (:tensors, :plan, :time, ...): write its function,
// add a row to kCommands (sorted by name), and a Command row to lang/api.cpp.
#include "repl/commands.hpp"

#include <lua.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "repl/help.hpp"
#include "repl/run.hpp"
#include "repl/shell.hpp"

namespace tapestry::repl {

namespace {

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// A file argument: surrounding quotes dropped, a leading "~/" is the home folder.
std::string path_argument(std::string_view arg) {
  arg = trim(arg);
  if (arg.size() >= 2 && (arg.front() == '"' || arg.front() == '\'') && arg.back() == arg.front())
    arg = arg.substr(1, arg.size() - 2);
  const char* home = std::getenv("HOME");
  if (arg.starts_with("~/") && home != nullptr) return std::string(home) + std::string(arg.substr(1));
  return std::string(arg);
}

void cmd_help(Shell& sh, std::string_view args) {
  bool found = true;
  std::string text = help_for(args, &found);
  if (found) {
    fputs(text.c_str(), stdout);
    fflush(stdout);
  } else {
    text.pop_back();  // print_error adds the newline
    print_error("", text);
    ++sh.errors;
  }
}

void cmd_load(Shell& sh, std::string_view args) {
  std::string path = path_argument(args);
  if (path.empty()) {
    print_error("", "usage: :load FILE");
    ++sh.errors;
    return;
  }
  if (run_file(sh.L, path.c_str(), {}, "") != LUA_OK) ++sh.errors;
}

void cmd_quit(Shell& sh, std::string_view) { sh.quit = true; }

constexpr Command kCommands[] = {
    {":help", ":help [name]", "help for a function, method or command; the list without a name",
     cmd_help},
    {":load", ":load FILE", "run a Lua script inside the session", cmd_load},
    {":quit", ":quit", "leave the shell (Ctrl-D does too)", cmd_quit},
};

}  // namespace

std::span<const Command> commands() { return kCommands; }

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands)
    if (c.name == name || c.name.substr(1) == name) return &c;
  return nullptr;
}

void run_command(Shell& sh, std::string_view line) {
  line = trim(line);
  size_t space = line.find_first_of(" \t");
  std::string_view name = line.substr(0, space);
  std::string_view args = space == std::string_view::npos ? std::string_view() : line.substr(space);
  const Command* c = name.size() > 1 ? find_command(name) : nullptr;
  if (c == nullptr) {
    print_error("", "unknown command '" + std::string(name) + "' (type :help for the list)");
    ++sh.errors;
    return;
  }
  c->run(sh, trim(args));
}

}  // namespace tapestry::repl
