// Sessions in one process are independent: each has its own named tensors, counters, plan
// cache, mesh, seed and Lua states.
#include <doctest/doctest.h>

#include <lauxlib.h>
#include <lua.h>

#include <string>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/value.hpp"
#include "engine/session/memory_budget.hpp"
#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "engine/telemetry/stats.hpp"
#include "lang/state.hpp"

using namespace tapestry;

namespace {

Config on_ranks(int ranks) {
  Config c;
  c.ranks = ranks;
  return c;
}

// A new expression of the same structure each call (a source is never merged with another
// node), so each one is planned, and the plan cache may hit.
NodeRef doubled_sum() {
  auto v = Value::alloc(DType::F32, {64, 8});
  for (int64_t i = 0; i < 64 * 8; ++i) v->data<float>()[i] = 1;
  const NodeRef x = make_source(v, {64, 8}, DType::F32);
  return build::reduce(Op::Sum, build::binary(Op::Mul, x, build::Operand::number(2)), {0, 1}, false);
}

std::string run_lua(lua_State* L, const char* chunk) {
  if (luaL_dostring(L, chunk) != LUA_OK) return lua_tostring(L, -1);
  std::string out = lua_isnoneornil(L, -1) ? "" : luaL_tolstring(L, -1, nullptr);
  lua_settop(L, 0);
  return out;
}

}  // namespace

TEST_CASE("engine.session.sessions_keep_their_own_named_tensors") {
  Session a(on_ranks(1)), b(on_ranks(1));
  a.env().bind("w", build::full({2}, 3, DType::F32));
  CHECK(a.env().get("w") != nullptr);
  CHECK(b.env().get("w") == nullptr);
  materialize(a);
  CHECK(a.env().get("w")->value != nullptr);
  CHECK(b.env().names().empty());
}

TEST_CASE("engine.session.sessions_count_their_own_observations") {
  Session a(on_ranks(1)), b(on_ranks(1));
  const uint64_t outside = stats().observations;
  observe_values(a, {doubled_sum()});
  observe_values(a, {doubled_sum()});
  CHECK(a.telemetry().stats.observations == 2);
  CHECK(a.telemetry().stats.kernels > 0);
  CHECK(b.telemetry().stats.observations == 0);
  CHECK(stats().observations == outside);  // no session's telemetry is current after
  observe_values(b, {doubled_sum()});
  CHECK(b.telemetry().stats.observations == 1);
  CHECK(a.telemetry().stats.observations == 2);
}

TEST_CASE("engine.session.sessions_have_their_own_plan_cache_and_mesh") {
  Session a(on_ranks(2)), b(on_ranks(4));
  CHECK(a.mesh().ranks == 2);
  CHECK(b.mesh().ranks == 4);
  const NodeRef y1 = doubled_sum(), y2 = doubled_sum(), y3 = doubled_sum();
  observe_values(a, {y1});
  observe_values(a, {y2});  // the same structure: a's cache has its plan
  CHECK(a.planner().stats.plans == 2);
  CHECK(a.planner().stats.cache_hits == 1);
  CHECK(a.telemetry().stats.blocks_run > 0);
  observe_values(b, {y3});  // b plans for itself, on its own mesh
  CHECK(b.planner().stats.plans == 1);
  CHECK(b.planner().stats.cache_hits == 0);
  CHECK(a.planner().stats.plans == 2);
  for (const NodeRef& y : {y1, y2, y3}) CHECK(y->value->data<float>()[0] == 1024);
  b.set_ranks(1);
  CHECK(b.mesh().ranks == 1);
  CHECK(a.mesh().ranks == 2);
}

TEST_CASE("engine.session.lua_states_work_in_their_own_session") {
  Session a(on_ranks(1)), b(on_ranks(2));
  lua_State* la = new_tapestry_state(a);
  lua_State* lb = new_tapestry_state(b);
  CHECK(run_lua(la, "tp.env.w = tp.ones{4} * 2; tp.seed(7); return tp.env.w:sum():item()") == "8.0");
  CHECK(run_lua(lb, "return tp.env.w") == "");
  CHECK(run_lua(lb, "return tp.seed()") == std::to_string(0x5eed));
  CHECK(run_lua(la, "return tp.seed()") == "7");
  CHECK(run_lua(lb, "return tp.mesh().ranks") == "2");
  CHECK(run_lua(la, "return tp.mesh().ranks") == "1");
  CHECK(run_lua(lb, "return tp.stats().observations") == "0");
  CHECK(a.telemetry().stats.observations > 0);
  lua_close(la);
  lua_close(lb);
}

// The memory budget: the default follows the memory available at start, split over the
// machine's ranks; every allocation is checked against it (ranks in this process times the
// per-rank figure), and a refusal leaves nothing counted.
TEST_CASE("engine.session.memory_budget") {
  CHECK(default_memory_per_rank(int64_t{16} << 30, 1) == (int64_t{14} << 30));  // less an eighth
  CHECK(default_memory_per_rank(int64_t{16} << 30, 4) == (int64_t{14} << 30) / 4);
  CHECK(default_memory_per_rank(int64_t{1} << 30, 1) == (int64_t{768} << 20));   // at least 256 MiB off
  CHECK(default_memory_per_rank(int64_t{100} << 20, 8) == (int64_t{64} << 20));  // a floor
  CHECK(default_memory_per_rank(0, 1) == int64_t{16} * 1000 * 1000 * 1000);      // unknown
  CHECK(available_memory() > 0);

  Config c;
  c.memory_per_rank = int64_t{1} << 20;
  Session s(c);
  CHECK(s.memory_per_rank() == (int64_t{1} << 20));
  CHECK(memory_budget() == (int64_t{1} << 20));
  CHECK(s.mesh().mem_bytes_per_rank == doctest::Approx(1 << 20));
  s.set_ranks(3);  // virtual ranks: this process holds all three
  CHECK(memory_budget() == (int64_t{3} << 20));
  const int64_t live = Buffer::live_bytes();
  CHECK_THROWS_AS(Value::alloc(DType::F32, {int64_t{1} << 20}), OutOfMemory);  // 4 MiB > 3 MiB
  CHECK(Buffer::live_bytes() == live);
  CHECK(Value::alloc(DType::F32, {1024}) != nullptr);
  s.set_memory_per_rank(0);  // back to the default
  CHECK(s.memory_per_rank() > (int64_t{64} << 20));
  set_memory_budget(0);
}
