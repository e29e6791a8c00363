// lua.c's docall/msghandler/report, plus the engine's cancel flag. Ctrl-C does only
// async-signal-safe things: set a count hook (the next Lua instruction raises
// "interrupted!") and ask the executor to stop at its next kernel boundary.
#include "repl/run.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "engine/run/evaluator.hpp"
#include "engine/session/session.hpp"
#include "lang/state_context.hpp"

namespace tapestry::repl {

namespace {

lua_State* g_running = nullptr;          // the state docall is running, for the handler
Telemetry* g_telemetry = nullptr;        // its session's, whose evaluation Ctrl-C cancels
pthread_t g_running_thread;              // the thread running it
volatile sig_atomic_t g_interrupts = 0;  // Ctrl-C presses during this call

// The hook the handler installs: the next Lua instruction stops the chunk.
void lstop(lua_State* L, lua_Debug*) {
  lua_sethook(L, nullptr, 0, 0);
  luaL_error(L, "interrupted!");
}

// Only a count hook: Lua code stops at its next instruction, while an error raised by
// the engine's cancel still reaches the (C) message handler with its own message.
// The kernel may deliver SIGINT to an engine worker thread: pass it on to the thread
// that runs Lua, so the hook and the count apply there.
void on_sigint(int sig) {
  if (!pthread_equal(pthread_self(), g_running_thread)) {
    pthread_kill(g_running_thread, sig);
    return;
  }
  g_interrupts = g_interrupts + 1;
  if (g_interrupts >= 3) {  // something ignores us: let the third press end the process
    static const char msg[] = "\ntapestry: interrupted three times; exiting\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
    return;
  }
  if (g_telemetry != nullptr) g_telemetry->request_cancel();
  if (g_running != nullptr) lua_sethook(g_running, lstop, LUA_MASKCOUNT, 1);
}

// lua.c's msghandler: a string message gets a traceback; an object with __tostring
// is converted; anything else is described.
int msghandler(lua_State* L) {
  const char* msg = lua_tostring(L, 1);
  if (msg == nullptr) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

}  // namespace

int docall(lua_State* L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);

  struct sigaction action = {}, previous = {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  Telemetry& telemetry = session_of(L).telemetry();
  telemetry.clear_cancel();
  g_interrupts = 0;
  g_telemetry = &telemetry;
  g_running = L;
  g_running_thread = pthread_self();
  sigaction(SIGINT, &action, &previous);
  int status = lua_pcall(L, narg, nres, base);
  sigaction(SIGINT, &previous, nullptr);
  g_running = nullptr;
  g_telemetry = nullptr;
  // A cancel that ended inside the engine leaves our hook set; a user's own hook stays.
  if (lua_gethook(L) == lstop) lua_sethook(L, nullptr, 0, 0);
  telemetry.clear_cancel();

  lua_remove(L, base);
  return status;
}

void print_error(std::string_view prefix, std::string_view message) {
  fflush(stdout);
  if (!prefix.empty()) fprintf(stderr, "%.*s: ", static_cast<int>(prefix.size()), prefix.data());
  fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
  fflush(stderr);
}

int report(lua_State* L, int status, std::string_view prefix) {
  if (status < LUA_OK || status > LUA_ERRFILE) {
    // Not a Lua status: a C++ exception crossed lua_pcall (Lua built as C++ catches
    // everything) and the value on top is not a message. A binding failed to convert it.
    lua_pop(L, 1);
    print_error(prefix, "internal error: a C++ exception escaped a Lua binding");
    return status;
  }
  if (status != LUA_OK) {
    size_t len = 0;
    const char* msg = lua_tolstring(L, -1, &len);
    print_error(prefix, msg != nullptr ? std::string_view(msg, len)
                                       : std::string_view("(error object is not a string)"));
    lua_pop(L, 1);
  }
  return status;
}

int run_string(lua_State* L, std::string_view chunk, const char* chunkname, std::string_view prefix) {
  int status = luaL_loadbuffer(L, chunk.data(), chunk.size(), chunkname);
  if (status == LUA_OK) status = docall(L, 0, 0);
  return report(L, status, prefix);
}

int run_file(lua_State* L, const char* path, std::span<const std::string> args, std::string_view prefix) {
  int status = luaL_loadfile(L, path);
  if (status == LUA_OK) {
    luaL_checkstack(L, static_cast<int>(args.size()) + 1, "too many script arguments");
    for (const std::string& a : args) lua_pushlstring(L, a.data(), a.size());
    status = docall(L, static_cast<int>(args.size()), 0);
  }
  return report(L, status, prefix);
}

}  // namespace tapestry::repl
