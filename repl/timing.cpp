// :time reads the engine's counters (tp.stats: engine/telemetry/stats.hpp and the planner's)
// before and after, so the phases are the engine's own measurements, not guesses: plan is
// planning plus scheduling, move the time spent sending, receiving and combining between
// ranks, run the rest of the evaluation. Tensor results are computed before printing, so
// print is formatting and output alone.
#include "repl/timing.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "engine/session/session.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"
#include "repl/run.hpp"
#include "repl/shell.hpp"

namespace tapestry::repl {

namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

struct Counters {
  double plan = 0, run = 0, move = 0;
  uint64_t plans = 0, cache_hits = 0, blocks = 0, kernels = 0, messages = 0, bytes = 0;

  static Counters now(Session& ses) {
    const Stats& s = ses.telemetry().stats;
    const plan::PlannerStats& p = ses.planner().stats;
    return {p.time_plan + s.time_schedule,
            s.time_run,
            s.time_move,
            p.plans,
            p.cache_hits,
            s.blocks_run,
            s.kernels,
            s.messages,
            s.bytes_moved};
  }
  Counters operator-(const Counters& o) const {
    return {plan - o.plan,
            run - o.run,
            move - o.move,
            plans - o.plans,
            cache_hits - o.cache_hits,
            blocks - o.blocks,
            kernels - o.kernels,
            messages - o.messages,
            bytes - o.bytes};
  }
};

std::string human_bytes(double b) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, kUnits[u]);
  return buf;
}

// Observes every tensor among the values from `base` to the top (tp.eval), so printing
// them afterwards only formats.
int eval_tensors(lua_State* L, int base) {
  const int top = lua_gettop(L);
  lua_getglobal(L, "tp");
  lua_getfield(L, -1, "eval");
  lua_remove(L, -2);
  int n = 0;
  for (int i = base; i <= top; ++i)
    if (luaL_testudata(L, i, kTensorMeta) != nullptr) lua_pushvalue(L, i), ++n;
  if (n == 0) {
    lua_pop(L, 1);
    return LUA_OK;
  }
  return docall(L, n, 0);
}

void report_times(double total, double print, const Counters& d) {
  const double run = d.run - d.move > 0 ? d.run - d.move : 0;
  const double lua = total - print - d.plan - d.run;
  std::printf("-- time %.3f s\n", total);
  std::printf("   plan   %8.3f s   (%llu plan%s, %llu from the cache)\n", d.plan,
              static_cast<unsigned long long>(d.plans), d.plans == 1 ? "" : "s",
              static_cast<unsigned long long>(d.cache_hits));
  // A sharded run counts blocks (over all ranks); one rank counts kernels.
  std::printf("   run    %8.3f s   (%llu %s)\n", run,
              static_cast<unsigned long long>(d.blocks > 0 ? d.blocks : d.kernels),
              d.blocks > 0 ? "blocks" : "kernels");
  std::printf("   move   %8.3f s   (%s in %llu messages)\n", d.move, human_bytes(double(d.bytes)).c_str(),
              static_cast<unsigned long long>(d.messages));
  std::printf("   print  %8.3f s\n", print);
  std::printf("   lua    %8.3f s   (the rest: Lua code, building expressions)\n", lua > 0 ? lua : 0.0);
  std::fflush(stdout);
}

}  // namespace

void cmd_time(Shell& sh, std::string_view args) {
  lua_State* L = sh.L;
  if (args.empty()) {
    print_error("", "usage: :time EXPR-or-STATEMENT");
    ++sh.errors;
    return;
  }
  const int base = lua_gettop(L) + 1;
  std::string chunk = "return " + std::string(args) + ";";
  if (luaL_loadbuffer(L, chunk.data(), chunk.size(), "=stdin") != LUA_OK) {
    lua_pop(L, 1);
    chunk.assign(args);
    if (luaL_loadbuffer(L, chunk.data(), chunk.size(), "=stdin") != LUA_OK) {
      report(L, LUA_ERRSYNTAX, "");
      ++sh.errors;
      return;
    }
  }
  const Counters before = Counters::now(session_of(L));
  const double t0 = now_s();
  int status = docall(L, 0, LUA_MULTRET);
  if (status == LUA_OK) status = eval_tensors(L, base);
  const double t1 = now_s();
  const Counters d = Counters::now(session_of(L)) - before;
  if (status != LUA_OK) {
    report(L, status, "");
    ++sh.errors;
    lua_settop(L, base - 1);
    return;
  }
  print_values(sh, base);
  const double t2 = now_s();
  lua_settop(L, base - 1);
  report_times(t2 - t0, t2 - t1, d);
}

void cmd_trace(Shell& sh, std::string_view args) {
  lua_State* L = sh.L;
  static const char kChunk[] =
      "local path = ... "
      "if path == nil then "
      "  local done = tp.trace(nil) "
      "  print(done and ('trace written to ' .. done) or 'no trace is running') "
      "else "
      "  print('tracing to ' .. tp.trace(path) .. ' (:trace off finishes it)') "
      "end";
  if (args.empty()) {
    print_error("", "usage: :trace FILE / :trace off");
    ++sh.errors;
    return;
  }
  int status = luaL_loadbuffer(L, kChunk, sizeof kChunk - 1, "=(:trace)");
  if (status == LUA_OK) {
    if (args == "off") lua_pushnil(L);
    else lua_pushlstring(L, args.data(), args.size());
    status = docall(L, 1, 0);
  }
  if (report(L, status, "") != LUA_OK) ++sh.errors;
}

}  // namespace tapestry::repl
