// Running Lua code the way lua.c does: under a message handler that appends a
// traceback, with Ctrl-C armed to stop both Lua code and the engine's evaluation.
//   luaL_loadstring(L, "print(tp.ones{2} * 2)");
//   int status = docall(L, 0, 0);                 // LUA_OK, or a message on the stack
//   report(L, status, "tapestry");                // "tapestry: [string]:1: ...\nstack traceback:..."
#pragma once

#include <span>
#include <string>
#include <string_view>

struct lua_State;

namespace tapestry::repl {

// Calls the function below `narg` arguments on the stack, like lua_pcall, but with a
// traceback handler and with SIGINT setting a Lua hook and the engine's cancel flag.
// The previous SIGINT disposition is restored afterwards.
int docall(lua_State* L, int narg, int nres);

// If status is not LUA_OK, prints the message on top of the stack to stderr (after
// "prefix: " when prefix is not empty) and pops it. Returns status.
int report(lua_State* L, int status, std::string_view prefix);

// Prints a message to stderr the way report does (stdout flushed first, so the two
// streams interleave in order when they go to the same place).
void print_error(std::string_view prefix, std::string_view message);

// Loads and runs a chunk / a file (nullptr: standard input) with `args` as `...`;
// errors are reported with `prefix`. Return a Lua status.
int run_string(lua_State* L, std::string_view chunk, const char* chunkname, std::string_view prefix);
int run_file(lua_State* L, const char* path, std::span<const std::string> args, std::string_view prefix);

}  // namespace tapestry::repl
