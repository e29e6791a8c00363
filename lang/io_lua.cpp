// Files: tp.load, tp.save, tp.save_env, tp.load_env (engine/io does the work).
//   local w = tp.load("w.npy", {name = "w", dtype = "f64"})
//   tp.save(x * 2, "out.npy")              -- an observation point
//   tp.save_env("ckpt");  local names = tp.load_env("ckpt")
// On N ranks a named load and every save are parallel (engine/io/parallel_io.hpp): each rank
// reads or writes only its own boxes; a failure on any rank is an error naming it.
#include <lauxlib.h>
#include <lua.h>

#include <string>
#include <vector>

#include "engine/io/lazy_load.hpp"
#include "engine/io/npy.hpp"
#include "engine/io/parallel_io.hpp"
#include "engine/plan/planner.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/checkpoint.hpp"
#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "engine/session/sharded_io.hpp"
#include "engine/telemetry/telemetry.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/save_parts.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

int push_names(lua_State* L, const std::vector<std::string>& names) {
  lua_createtable(L, static_cast<int>(names.size()), 0);
  for (size_t i = 0; i < names.size(); ++i) {
    lua_pushlstring(L, names[i].data(), names[i].size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

}  // namespace

int l_load(lua_State* L) {
  const std::string path = check_path(L, 1);
  const Options o(L, 2, {"dtype", "name"});
  const std::optional<DType> dtype = o.dtype();
  const std::optional<std::string> name = o.string("name");
  // Check the name before reading: a bad name should not cost a large read.
  if (name) user_check(is_identifier(*name), "'", *name, "' is not a valid tensor name (use an identifier)");
  // Lazy: the header now, the data when observed, each rank reading only the boxes its
  // blocks need (a named tensor on N ranks is read in parallel at the next observation).
  Session& s = session_of(L);
  NodeRef n = io::lazy_raw(path, io::read_npy_header(path));
  if (dtype && *dtype != n->dtype) n = build::cast(n, *dtype);
  if (name) s.env().bind(*name, n);
  push_tensor(L, std::move(n), name.value_or(""));
  return 1;
}

int l_save(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const std::string path = check_path(L, 2);
  // On N ranks the value is computed (or already stored) sharded and each rank writes its
  // own boxes; rank 0 writes only the header.
  Session& ses = session_of(L);
  const TelemetryScope in(ses.telemetry());
  const NodeRef part = computed_for_save(L, {x})[0];
  if (is_stored(L, part)) {
    io::save_npy_sharded(ses, {{path, part}});
    return 0;
  }
  const SaveProgress bar(numel(x->shape) * dtype_size(x->dtype));
  io::save_npy(path, part->value->view());
  return 0;
}

int l_save_env(lua_State* L) {
  const std::string dir = check_path(L, 1);
  Session& s = session_of(L);
  s.telemetry().clear_cancel();
  return push_names(L, io::save_env(s, dir));
}

int l_checkpoint(lua_State* L) {
  const std::string dir = lua_isnoneornil(L, 1) ? std::string() : check_path(L, 1);
  Session& s = session_of(L);
  s.telemetry().clear_cancel();
  return push_names(L, io::checkpoint(s, dir));
}

int l_load_env(lua_State* L) { return push_names(L, io::load_env(session_of(L), check_path(L, 1))); }

}  // namespace tapestry::lua
