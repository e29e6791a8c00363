// The read-eval-print loop, modelled on lua.c's doREPL: an expression typed alone is
// printed, an incomplete chunk waits for more lines, errors never end the session,
// and lines starting with ':' are the shell's own commands (repl/commands.hpp).
//   lua_State* L = tapestry::new_tapestry_state(session);
//   int status = tapestry::repl::run_shell(L, isatty(STDIN_FILENO));  // until Ctrl-D or :quit
//   lua_close(L);
#pragma once

#include <string>
#include <string_view>

struct lua_State;

namespace tapestry::repl {

class LineReader;

inline constexpr const char* kPrompt = "tapestry> ";
inline constexpr const char* kContinuationPrompt = "      ... ";

// What commands may touch: the Lua state, the input (for history), and the loop.
struct Shell {
  lua_State* L;
  LineReader& input;
  bool quit = false;  // set by :quit
  int errors = 0;     // chunks and commands that failed
};

// Runs the loop until the input ends or :quit. `terminal`: stdin is a terminal (prompts,
// banner, libedit); otherwise lines are read plainly and only results and errors show.
// Returns the exit status: 0, or 1 when reading from a pipe and some chunk failed.
int run_shell(lua_State* L, bool terminal);

// Runs one line typed at the prompt (reading continuation lines as needed).
void eval_line(Shell& shell, std::string_view line);

// Prints the values from stack index `base` to the top as the prompt does (through print,
// tab-separated; a tensor is observed, a table is shown nested: repl/show_value.hpp) and keeps
// the first non-nil one in `_`.
void print_values(Shell& shell, int base);

// "tapestry> ", or "tapestry[4 ranks]> " when L's session's mesh has more than one rank.
std::string prompt(lua_State* L);

}  // namespace tapestry::repl
