// lua.c's REPL in C++: try "return <line>" so an expression prints; else load the line
// as a statement and, while the syntax error ends in "<eof>", read another line.
#include "repl/shell.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <cstdio>
#include <exception>
#include <string>

#include "engine/plan/planner.hpp"
#include "engine/session/session.hpp"
#include "lang/state_context.hpp"
#include "repl/cli.hpp"
#include "repl/commands.hpp"
#include "repl/complete.hpp"
#include "repl/line_reader.hpp"
#include "repl/run.hpp"
#include "repl/show_value.hpp"

namespace tapestry::repl {

namespace {

constexpr const char* kChunkName = "=stdin";
constexpr std::string_view kEofMark = "<eof>";

// lua.c's incomplete(): a syntax error at the end of the input means "keep reading".
bool incomplete(lua_State* L, int status) {
  if (status != LUA_ERRSYNTAX) return false;
  size_t len = 0;
  const char* msg = lua_tolstring(L, -1, &len);
  return std::string_view(msg, len).ends_with(kEofMark);
}

}  // namespace

// Prints the values from `base` to the top with the global print (tab-separated, through
// tostring, so tensors are observed here; tables through show_value) and keeps the first in `_`.
void print_values(Shell& sh, int base) {
  lua_State* L = sh.L;
  int n = lua_gettop(L) - base + 1;
  if (n <= 0) return;
  luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
  lua_pushvalue(L, base);  // the candidate for `_`, kept below the values
  lua_insert(L, base);
  lua_getglobal(L, "print");
  lua_pushcclosure(L, print_shown, 1);  // tables shown readably, the rest as print does
  lua_insert(L, base + 1);
  int status = docall(L, n, 0);  // printing a lazy tensor computes it: Ctrl-C applies
  if (status == LUA_OK && !lua_isnil(L, base)) {
    lua_setglobal(L, "_");
  } else {
    if (status != LUA_OK) {
      report(L, status, "");
      ++sh.errors;
    }
    lua_pop(L, 1);
  }
}

namespace {

// Runs the loaded function on top of the stack and prints what it returns.
void run_loaded(Shell& sh) {
  int base = lua_gettop(sh.L);
  int status = docall(sh.L, 0, LUA_MULTRET);
  if (status == LUA_OK) {
    print_values(sh, base);
  } else {
    report(sh.L, status, "");
    ++sh.errors;
  }
  lua_settop(sh.L, base - 1);
}

// A line that starts with ':' is a command; "::name::" is a Lua goto label.
bool is_command(std::string_view line) {
  size_t i = line.find_first_not_of(" \t");
  return i != std::string_view::npos && line[i] == ':' && line.substr(i + 1, 1) != ":";
}

}  // namespace

std::string prompt(lua_State* L) {
  const int ranks = session_of(L).mesh().ranks;
  return ranks > 1 ? "tapestry[" + std::to_string(ranks) + " ranks]> " : kPrompt;
}

void eval_line(Shell& sh, std::string_view line) {
  lua_State* L = sh.L;
  // "return <line>" first, so an expression prints; "=expr" is lua 5.1's spelling.
  std::string_view expr = line.starts_with("=") ? line.substr(1) : line;
  std::string chunk = "return " + std::string(expr) + ";";
  if (luaL_loadbuffer(L, chunk.data(), chunk.size(), kChunkName) == LUA_OK) {
    sh.input.remember(line);
    run_loaded(sh);
    return;
  }
  lua_pop(L, 1);

  chunk.assign(line);
  for (;;) {
    int status = luaL_loadbuffer(L, chunk.data(), chunk.size(), kChunkName);
    if (!incomplete(L, status)) {
      sh.input.remember(chunk);
      if (status == LUA_OK) {
        run_loaded(sh);
      } else {
        report(L, status, "");
        ++sh.errors;
      }
      return;
    }
    lua_pop(L, 1);
    std::string more;
    LineReader::Status got = sh.input.read(kContinuationPrompt, more);
    if (got == LineReader::Status::Interrupted) return;  // Ctrl-C drops the whole chunk
    if (got == LineReader::Status::End) {                // input ended inside the chunk: say why it is bad
      sh.input.remember(chunk);
      report(L, luaL_loadbuffer(L, chunk.data(), chunk.size(), kChunkName), "");
      ++sh.errors;
      return;
    }
    chunk += '\n';
    chunk += more;
  }
}

int run_shell(lua_State* L, bool terminal) {
  LineReader input(terminal);
  Shell sh{L, input};
  if (terminal) {
    printf("%s on %s. Type :help for help, Ctrl-D to leave.\n", version_text().c_str(), LUA_RELEASE);
    fflush(stdout);
    install_completion(L);
  }
  std::string line;
  while (!sh.quit) {
    LineReader::Status got = input.read(prompt(L).c_str(), line);
    if (got == LineReader::Status::End) break;
    if (got == LineReader::Status::Interrupted) continue;
    if (!is_command(line)) {
      eval_line(sh, line);
      continue;
    }
    input.remember(line);
    try {
      run_command(sh, line);
    } catch (const std::exception& e) {  // a bug in a command must not end the session
      print_error("tapestry", std::string("internal error in ") + line + ": " + e.what());
      ++sh.errors;
    }
  }
  if (terminal) install_completion(nullptr);
  return !terminal && sh.errors > 0 ? 1 : 0;
}

}  // namespace tapestry::repl
