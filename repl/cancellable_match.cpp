#include "repl/cancellable_match.hpp"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace tapestry::repl {

namespace {

double g_direct_steps = 1e7;       // below this a call runs in place: no thread to start
constexpr int kMaxHelpers = 4;     // helper threads still running (abandoned ones included)
constexpr int kGmatchBatch = 256;  // matches a gmatch iterator fetches at a time

const std::atomic<bool>* g_stop = nullptr;
std::atomic<int> g_helpers{0};

using Value = std::variant<std::monostate, lua_Integer, std::string>;
using Values = std::vector<Value>;

// A Lua state of its own with the string library: only one thread uses it at a time, and it
// shares nothing with the session, so a thread left running in it harms no one.
struct Helper {
  lua_State* H = luaL_newstate();
  Helper() {
    if (H) luaL_openlibs(H);
  }
  ~Helper() {
    if (H) lua_close(H);
  }
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;
};

// One piece of work on a helper thread; shared with it, so an abandoned one outlives its waiter.
struct Work {
  std::shared_ptr<Helper> helper;
  std::function<void(lua_State*, Values&)> fn;  // raises Lua errors: run under lua_pcall
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string error;
  Values out;
};

int run_work_protected(lua_State* H) {
  auto* w = static_cast<Work*>(lua_touserdata(H, 1));
  lua_settop(H, 0);
  w->fn(H, w->out);
  return 0;
}

// The top `from..top` values of H, as Values.
void take(lua_State* H, int from, Values& out) {
  for (int i = from; i <= lua_gettop(H); ++i) {
    if (lua_isinteger(H, i)) {
      out.emplace_back(lua_tointeger(H, i));
    } else if (lua_type(H, i) == LUA_TSTRING) {
      size_t n = 0;
      const char* s = lua_tolstring(H, i, &n);
      out.emplace_back(std::string(s, n));
    } else {
      out.emplace_back(std::monostate{});
    }
  }
}

void push(lua_State* L, const Value& v) {
  if (const auto* i = std::get_if<lua_Integer>(&v)) lua_pushinteger(L, *i);
  else if (const auto* s = std::get_if<std::string>(&v)) lua_pushlstring(L, s->data(), s->size());
  else lua_pushnil(L);
}

// Runs fn on a helper thread while this one waits, watching the stop flag; raises
// "interrupted!" (leaving the helper to finish alone) or fn's error. Returns what fn produced.
Values run_cancellable(lua_State* L, std::shared_ptr<Helper> helper,
                       std::function<void(lua_State*, Values&)> fn) {
  if (!helper->H) luaL_error(L, "not enough memory");
  auto w = std::make_shared<Work>();
  w->helper = std::move(helper);
  w->fn = std::move(fn);
  ++g_helpers;
  std::thread([w] {
    lua_State* H = w->helper->H;
    lua_pushcfunction(H, run_work_protected);
    lua_pushlightuserdata(H, w.get());
    if (lua_pcall(H, 1, 0, 0) != LUA_OK) {
      size_t n = 0;
      const char* m = lua_tolstring(H, -1, &n);
      w->error = m ? std::string(m, n) : "error in a pattern match";
      lua_settop(H, 0);
    }
    {
      std::lock_guard lock(w->mu);
      w->done = true;
    }
    w->cv.notify_all();
    --g_helpers;
  }).detach();
  std::unique_lock lock(w->mu);
  while (!w->done) {
    w->cv.wait_for(lock, std::chrono::milliseconds(50));
    if (!w->done && g_stop && g_stop->load()) {
      lock.unlock();
      luaL_error(L, "interrupted!");  // the helper finishes alone
    }
  }
  if (!w->error.empty()) luaL_error(L, "%s", w->error.c_str());
  return std::move(w->out);
}

// True when the call is small enough to run in place. A large one while kMaxHelpers helpers
// (interrupted ones finishing alone) still run is refused rather than run where nothing
// could stop it.
bool in_place(lua_State* L, std::string_view pattern, size_t length) {
  if (pattern_cost(pattern, length) <= g_direct_steps) return true;
  if (g_helpers.load() >= kMaxHelpers)
    luaL_error(L, "%d interrupted pattern matches are still running; try again later", kMaxHelpers);
  return false;
}

// Calls the original (upvalue 1) with this call's arguments.
int call_original(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

// string.find / string.match (upvalue 2: the name): the original itself, in the helper.
int find_or_match(lua_State* L) {
  size_t ns = 0, np = 0;
  const char* s = luaL_checklstring(L, 1, &ns);
  const char* p = luaL_checklstring(L, 2, &np);
  const std::string fn = lua_tostring(L, lua_upvalueindex(2));
  if ((fn == "find" && lua_toboolean(L, 4)) || in_place(L, {p, np}, ns)) return call_original(L);
  const lua_Integer init = luaL_optinteger(L, 3, 1);
  // By value: an interrupted helper goes on using them after this call has gone.
  const Values out = run_cancellable(
      L, std::make_shared<Helper>(),
      [fn, subject = std::string(s, ns), pattern = std::string(p, np), init](lua_State* H, Values& r) {
        lua_getglobal(H, "string");
        lua_getfield(H, -1, fn.c_str());
        lua_pushlstring(H, subject.data(), subject.size());
        lua_pushlstring(H, pattern.data(), pattern.size());
        lua_pushinteger(H, init);
        const int base = lua_gettop(H) - 4;
        lua_call(H, 3, LUA_MULTRET);
        take(H, base + 1, r);
      });
  lua_settop(L, 0);
  luaL_checkstack(L, static_cast<int>(out.size()), "too many captures");
  for (const Value& v : out) push(L, v);
  return static_cast<int>(out.size());
}

// gsub's matches, found in the helper as gsub finds them (an anchored find at each position,
// skipping an empty match where the last one ended): start, end, capture count, captures...
constexpr const char* kGsubMatches = R"(
local s, p, max = ...
local find = string.find
local anchor = p:byte(1) == 94
local ap = anchor and p or "^" .. p
local out, src, last, n = {}, 1, nil, 0
while n < max do
  local r = table.pack(find(s, ap, src))
  if r[1] and r[2] + 1 ~= last then
    n = n + 1
    out[#out + 1] = r[1]
    out[#out + 1] = r[2]
    out[#out + 1] = r.n - 2
    for i = 3, r.n do out[#out + 1] = r[i] end
    src = r[2] + 1
    last = src
  elseif src <= #s then
    src = src + 1
  else
    break
  end
  if anchor then break end
end
return table.unpack(out)
)";

// string.gsub: with a string replacement the original runs in the helper; with a table or a
// function the helper finds the matches and this thread replaces them (calling Lua).
int gsub(lua_State* L) {
  size_t ns = 0, np = 0;
  const char* s = luaL_checklstring(L, 1, &ns);
  const char* p = luaL_checklstring(L, 2, &np);
  const int rt = lua_type(L, 3);
  if (in_place(L, {p, np}, ns) ||
      !(rt == LUA_TNUMBER || rt == LUA_TSTRING || rt == LUA_TTABLE || rt == LUA_TFUNCTION))
    return call_original(L);  // (a bad replacement: the original's message)
  const std::string subject(s, ns), pattern(p, np);
  const lua_Integer max = luaL_optinteger(L, 4, static_cast<lua_Integer>(ns) + 1);
  if (rt == LUA_TNUMBER || rt == LUA_TSTRING) {
    size_t nr = 0;
    const char* r = lua_tolstring(L, 3, &nr);
    const std::string repl(r, nr);
    const Values out = run_cancellable(L, std::make_shared<Helper>(),
                                       [subject, pattern, repl, max](lua_State* H, Values& o) {
                                         lua_getglobal(H, "string");
                                         lua_getfield(H, -1, "gsub");
                                         lua_pushlstring(H, subject.data(), subject.size());
                                         lua_pushlstring(H, pattern.data(), pattern.size());
                                         lua_pushlstring(H, repl.data(), repl.size());
                                         lua_pushinteger(H, max);
                                         const int base = lua_gettop(H) - 5;
                                         lua_call(H, 4, 2);
                                         take(H, base + 1, o);
                                       });
    for (const Value& v : out) push(L, v);
    return 2;
  }
  const Values found =
      run_cancellable(L, std::make_shared<Helper>(), [subject, pattern, max](lua_State* H, Values& o) {
        if (luaL_loadstring(H, kGsubMatches) != LUA_OK) lua_error(H);
        lua_pushlstring(H, subject.data(), subject.size());
        lua_pushlstring(H, pattern.data(), pattern.size());
        lua_pushinteger(H, max);
        const int base = lua_gettop(H) - 4;
        lua_call(H, 3, LUA_MULTRET);
        take(H, base + 1, o);
      });
  luaL_Buffer b;
  luaL_buffinit(L, &b);  // pushes nothing below index 4 that we read: repl stays at 3
  size_t prev = 0, i = 0;
  lua_Integer n = 0;
  while (i + 3 <= found.size()) {
    const auto start = static_cast<size_t>(std::get<lua_Integer>(found[i]));
    const auto end = static_cast<size_t>(std::get<lua_Integer>(found[i + 1]));
    const auto caps = static_cast<size_t>(std::get<lua_Integer>(found[i + 2]));
    i += 3;
    luaL_addlstring(&b, subject.data() + prev, start - 1 - prev);
    const std::string whole = subject.substr(start - 1, end + 1 - start);
    if (rt == LUA_TFUNCTION) {
      lua_pushvalue(L, 3);
      if (caps == 0) lua_pushlstring(L, whole.data(), whole.size());
      for (size_t c = 0; c < caps; ++c) push(L, found[i + c]);
      lua_call(L, caps == 0 ? 1 : static_cast<int>(caps), 1);
    } else {
      if (caps == 0) lua_pushlstring(L, whole.data(), whole.size());
      else push(L, found[i]);
      lua_gettable(L, 3);
    }
    i += caps;
    if (!lua_toboolean(L, -1)) {  // nil or false: keep the original text
      lua_pop(L, 1);
      luaL_addlstring(&b, whole.data(), whole.size());
    } else if (!lua_isstring(L, -1)) {
      return luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    } else {
      luaL_addvalue(&b);
    }
    prev = end;
    ++n;
  }
  luaL_addlstring(&b, subject.data() + prev, subject.size() - prev);
  luaL_pushresult(&b);
  lua_pushinteger(L, n);
  return 2;
}

// A gmatch iterator over the original gmatch running in a helper state, a batch of matches
// at a time.
struct Gmatch {
  std::shared_ptr<Helper> helper = std::make_shared<Helper>();
  std::deque<Values> ready;
  bool started = false, finished = false;
  bool busy = false;  // a batch was interrupted: its helper may still be running
  std::string subject, pattern;
  lua_Integer init = 1;
};
constexpr const char* kGmatchMeta = "tapestry.cancellable_gmatch";

int gmatch_gc(lua_State* L) {
  static_cast<std::shared_ptr<Gmatch>*>(luaL_checkudata(L, 1, kGmatchMeta))->~shared_ptr();
  return 0;
}

int gmatch_step(lua_State* L) {
  auto& g = *static_cast<std::shared_ptr<Gmatch>*>(luaL_checkudata(L, lua_upvalueindex(1), kGmatchMeta));
  if (g->ready.empty() && !g->finished) {
    if (g->busy) return luaL_error(L, "this string.gmatch iterator was interrupted");
    g->busy = true;
    std::shared_ptr<Gmatch> keep = g;  // the helper's closure may outlive this call
    const Values batch = run_cancellable(L, keep->helper, [keep](lua_State* H, Values& o) {
      if (!keep->started) {  // the original iterator, kept in the helper's registry
        lua_getglobal(H, "string");
        lua_getfield(H, -1, "gmatch");
        lua_pushlstring(H, keep->subject.data(), keep->subject.size());
        lua_pushlstring(H, keep->pattern.data(), keep->pattern.size());
        lua_pushinteger(H, keep->init);
        lua_call(H, 3, 1);
        lua_setfield(H, LUA_REGISTRYINDEX, kGmatchMeta);
        lua_settop(H, 0);
        keep->started = true;
      }
      // Per match: the count of its values, then the values; a count of -1 ends the batch.
      for (int k = 0; k < kGmatchBatch; ++k) {
        lua_getfield(H, LUA_REGISTRYINDEX, kGmatchMeta);
        lua_call(H, 0, LUA_MULTRET);
        if (lua_gettop(H) == 0 || lua_isnil(H, 1)) {
          o.emplace_back(lua_Integer{-1});
          lua_settop(H, 0);
          return;
        }
        o.emplace_back(static_cast<lua_Integer>(lua_gettop(H)));
        take(H, 1, o);
        lua_settop(H, 0);
      }
    });
    g->busy = false;
    for (size_t i = 0; i < batch.size();) {
      const lua_Integer count = std::get<lua_Integer>(batch[i++]);
      if (count < 0) {
        g->finished = true;
        break;
      }
      g->ready.emplace_back(batch.begin() + static_cast<std::ptrdiff_t>(i),
                            batch.begin() + static_cast<std::ptrdiff_t>(i) + count);
      i += static_cast<size_t>(count);
    }
  }
  if (g->ready.empty()) return 0;
  const Values m = std::move(g->ready.front());
  g->ready.pop_front();
  luaL_checkstack(L, static_cast<int>(m.size()), "too many captures");
  for (const Value& v : m) push(L, v);
  return static_cast<int>(m.size());
}

int gmatch(lua_State* L) {
  size_t ns = 0, np = 0;
  const char* s = luaL_checklstring(L, 1, &ns);
  const char* p = luaL_checklstring(L, 2, &np);
  if (in_place(L, {p, np}, ns)) return call_original(L);
  const lua_Integer init = luaL_optinteger(L, 3, 1);
  auto* g = static_cast<std::shared_ptr<Gmatch>*>(lua_newuserdatauv(L, sizeof(std::shared_ptr<Gmatch>), 0));
  new (g) std::shared_ptr<Gmatch>(std::make_shared<Gmatch>());
  if (luaL_newmetatable(L, kGmatchMeta)) {
    lua_pushcfunction(L, gmatch_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  (*g)->subject.assign(s, ns);
  (*g)->pattern.assign(p, np);
  (*g)->init = init;
  lua_pushcclosure(L, gmatch_step, 1);
  return 1;
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
      if (i + 1 < p.size() && p[i + 1] == '^') ++i;
      if (i + 1 < p.size() && p[i + 1] == ']') ++i;  // "[]...]": the first ] is literal
    } else if (c == '*' || c == '+' || c == '-' || c == '?') {
      ++quantifiers;
    }
  }
  // Every start position, times each quantifier's choices.
  return std::pow(static_cast<double>(length) + 1, quantifiers + 1);
}

void install_cancellable_match(lua_State* L, const std::atomic<bool>* stop, double direct_steps) {
  g_stop = stop;
  g_direct_steps = direct_steps;
  lua_getglobal(L, "string");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  for (const char* fn : {"find", "match"}) {
    lua_getfield(L, -1, fn);
    lua_pushstring(L, fn);
    lua_pushcclosure(L, find_or_match, 2);
    lua_setfield(L, -2, fn);
  }
  lua_getfield(L, -1, "gsub");
  lua_pushcclosure(L, gsub, 1);
  lua_setfield(L, -2, "gsub");
  lua_getfield(L, -1, "gmatch");
  lua_pushcclosure(L, gmatch, 1);
  lua_setfield(L, -2, "gmatch");
  lua_pop(L, 1);
}

}  // namespace tapestry::repl
