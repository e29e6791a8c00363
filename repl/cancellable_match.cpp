#include "repl/cancellable_match.hpp"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace tapestry::repl {

namespace {

constexpr double kDirectSteps = 1e7;  // below this a call runs in place: no thread to start
constexpr int kMaxHelpers = 4;        // helpers still running (abandoned ones included)

const std::atomic<bool>* g_stop = nullptr;
std::atomic<int> g_helpers{0};

// One call on a helper thread; shared with it, so an abandoned call outlives its waiter.
struct Call {
  std::string fn, subject, pattern;
  lua_Integer init = 1;
  bool plain = false;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string error;
  std::vector<std::variant<std::monostate, lua_Integer, std::string>> results;
};

void run_call(Call& c) {
  lua_State* H = luaL_newstate();
  if (H == nullptr) {
    c.error = "not enough memory";
    return;
  }
  luaL_requiref(H, LUA_STRLIBNAME, luaopen_string, 0);
  lua_getfield(H, -1, c.fn.c_str());
  lua_pushlstring(H, c.subject.data(), c.subject.size());
  lua_pushlstring(H, c.pattern.data(), c.pattern.size());
  lua_pushinteger(H, c.init);
  int args = 3;
  if (c.fn == "find") lua_pushboolean(H, c.plain), ++args;
  const int base = lua_gettop(H) - args - 1;
  if (lua_pcall(H, args, LUA_MULTRET, 0) != LUA_OK) {
    size_t n = 0;
    const char* m = lua_tolstring(H, -1, &n);
    c.error = m ? std::string(m, n) : "error";
  } else {
    for (int i = base + 1; i <= lua_gettop(H); ++i) {
      if (lua_isinteger(H, i)) c.results.emplace_back(lua_tointeger(H, i));
      else if (lua_type(H, i) == LUA_TSTRING) {
        size_t n = 0;
        const char* s = lua_tolstring(H, i, &n);
        c.results.emplace_back(std::string(s, n));
      } else {
        c.results.emplace_back(std::monostate{});
      }
    }
  }
  lua_close(H);
}

// string.find / string.match (upvalue 1: the original, upvalue 2: its name).
int cancellable(lua_State* L) {
  size_t ns = 0, np = 0;
  const char* s = luaL_checklstring(L, 1, &ns);
  const char* p = luaL_checklstring(L, 2, &np);
  const std::string fn = lua_tostring(L, lua_upvalueindex(2));
  const bool plain = fn == "find" && lua_toboolean(L, 4);
  if (plain || pattern_cost({p, np}, ns) <= kDirectSteps || g_helpers.load() >= kMaxHelpers) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
  }
  auto call = std::make_shared<Call>();
  call->fn = fn;
  call->subject.assign(s, ns);
  call->pattern.assign(p, np);
  call->init = luaL_optinteger(L, 3, 1);
  ++g_helpers;
  std::thread([call] {
    run_call(*call);
    {
      std::lock_guard lock(call->mu);
      call->done = true;
    }
    call->cv.notify_all();
    --g_helpers;
  }).detach();
  {
    std::unique_lock lock(call->mu);
    while (!call->done) {
      call->cv.wait_for(lock, std::chrono::milliseconds(50));
      if (!call->done && g_stop && g_stop->load()) {
        lock.unlock();
        return luaL_error(L, "interrupted!");  // the helper finishes alone
      }
    }
  }
  if (!call->error.empty()) return luaL_error(L, "%s", call->error.c_str());
  lua_settop(L, 0);
  luaL_checkstack(L, static_cast<int>(call->results.size()), "too many captures");
  for (const auto& r : call->results) {
    if (const auto* i = std::get_if<lua_Integer>(&r)) lua_pushinteger(L, *i);
    else if (const auto* t = std::get_if<std::string>(&r)) lua_pushlstring(L, t->data(), t->size());
    else lua_pushnil(L);
  }
  return static_cast<int>(call->results.size());
}

}  // namespace

double pattern_cost(std::string_view p, size_t length) {
  int quantifiers = 0;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '%') {
      if (i + 1 < p.size() && p[i + 1] == 'b') ++quantifiers;  // %bxy scans ahead
      ++i;
    } else if (in_class) {
      if (c == ']') in_class = false;
    } else if (c == '[') {
      in_class = true;
      if (i + 1 < p.size() && p[i + 1] == ']') ++i;  // "[]...]": the first ] is literal
    } else if (c == '*' || c == '+' || c == '-' || c == '?') {
      ++quantifiers;
    }
  }
  // Every start position, times each quantifier's choices.
  return std::pow(static_cast<double>(length) + 1, quantifiers + 1);
}

void install_cancellable_match(lua_State* L, const std::atomic<bool>* stop) {
  g_stop = stop;
  lua_getglobal(L, "string");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  for (const char* fn : {"find", "match"}) {
    lua_getfield(L, -1, fn);
    lua_pushstring(L, fn);
    lua_pushcclosure(L, cancellable, 2);
    lua_setfield(L, -2, fn);
  }
  lua_pop(L, 1);
}

}  // namespace tapestry::repl
