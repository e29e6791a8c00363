// The bindings' side of pending records (engine/run/pending.hpp): making them from Lua
// arguments, observing them, and building their nodes when anything else reads them.
#include <lauxlib.h>
#include <lua.h>

#include <new>

#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry {

namespace {

// Records run on this process's CPU alone: one rank, no device, nothing spilled in bands, not
// an MPI job's driver, no trace being written (it shows the engine's kernels). Anywhere else the
// planner and the engine see every operation. TAPESTRY_RECORDS=0 turns them off
// (docs/debug.md): every operation a node.
bool takes_records(lua_State* L) {
  Session& s = session_of(L);
  const plan::Mesh& mesh = s.mesh();
  return s.config().records && mesh.ranks == 1 && !mesh.spill && !s.coordinator() && !s.device() &&
         !s.telemetry().trace.enabled.load(std::memory_order_relaxed);
}

// Argument i as a record operand; false for anything a record does not take (a released
// Tensor, a table, a boolean: the builders report those).
bool pending_arg(lua_State* L, int i, PendingArg& out) {
  switch (lua_type(L, i)) {
    case LUA_TNUMBER:
      out = lua_isinteger(L, i) ? PendingArg::of_integer(lua_tointeger(L, i))
                                : PendingArg::of_number(lua_tonumber(L, i));
      return true;
    case LUA_TUSERDATA:
      if (TensorHandle* h = to_tensor_handle(L, i)) {
        if (h->rec) out = PendingArg::of(h->rec.get());
        else if (h->node) out = PendingArg::of(h->node.get());
        else return false;
        return true;
      }
      return false;
    default: return false;
  }
}

void push_pending(lua_State* L, PendingRef r) {
  void* mem = lua_newuserdatauv(L, sizeof(TensorHandle), 0);
  auto* h = new (mem) TensorHandle{};
  h->rec.hold(std::move(r));
  lua_rawgeti(L, LUA_REGISTRYINDEX, state_context(L).tensor_meta);
  lua_setmetatable(L, -2);
}

bool push_if(lua_State* L, PendingRef r) {
  if (!r) return false;
  push_pending(L, std::move(r));
  return true;
}

}  // namespace

bool try_record_binary(lua_State* L, Op op) {
  PendingArg a, b;
  if (lua_gettop(L) != 2 || !pending_arg(L, 1, a) || !pending_arg(L, 2, b) || (a.number && b.number) ||
      !takes_records(L))
    return false;
  return push_if(L, record_binary(op, a, b));
}

bool try_record_sum(lua_State* L) {
  PendingArg x;
  if (lua_gettop(L) != 1 || !pending_arg(L, 1, x) || x.number || !takes_records(L)) return false;
  return push_if(L, record_sum(x));
}

bool try_record_matmul(lua_State* L) {
  PendingArg a, b;
  if (lua_gettop(L) != 2 || !pending_arg(L, 1, a) || !pending_arg(L, 2, b) || a.number || b.number ||
      !takes_records(L))
    return false;
  return push_if(L, record_matmul(a, b));
}

void promote(TensorHandle& h) {
  if (!h.rec) return;
  h.node = build_node(*h.rec.get());
  h.rec.reset();
}

bool observe_pending(lua_State* L, int first, int last) {
  if (!takes_records(L)) return false;  // the mesh changed since they were made
  Session& s = session_of(L);
  s.telemetry().clear_cancel();
  materialize(s);  // an observation computes pending tp.env bindings too
  Stats& st = s.telemetry().stats;
  for (int i = first; i <= last; ++i)
    if (!compute(*to_tensor_handle(L, i)->rec.get(), st)) return false;
  st.observations += 1;
  return true;
}

}  // namespace tapestry
