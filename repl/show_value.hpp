// How the shell shows a Lua table that is a result: nested, keys sorted, long parts cut.
//   tapestry> x.shape              tapestry> tp.stats()
//   {64, 32}                       {
//                                    blocks_run = 12,
//                                    bytes_moved = 180,
//                                    ...
//                                  }
// The sequence part comes first in order, then the other keys sorted (numbers, then strings,
// then the rest); identifiers are written `k = v`, other keys `[k] = v`. A table that fits on
// a line is written on one. Tensors inside a table are described, not computed
// ("<f32 tensor of shape {4096,4096}>"); a table with __tostring is written by it.
#pragma once

#include <string>

struct lua_State;

namespace tapestry::repl {

struct ShowLimits {
  int width = 75;    // a table that fits in this is written on one line
  int depth = 4;     // deeper tables are written "{...}"
  int entries = 24;  // per table; the rest is counted: "... (40 more)"
  int string = 120;  // characters of a string value before "..."
};

// The text of the value at `idx`. May call __tostring metamethods (and raise their errors).
std::string show_value(lua_State* L, int idx, const ShowLimits& limits = {});

// Replaces each table argument of the call (one without __tostring) by show_value's text, then
// calls the function in upvalue 1 (print) with them: the shell prints results through it.
int print_shown(lua_State* L);

}  // namespace tapestry::repl
