// SQLite databases: tp.load_sql, tp.save_sql (engine/io/sql.hpp).
//   local x, names = tp.load_sql("runs.db", "SELECT step, loss FROM log WHERE run = 3")
//   tp.save_sql(x, "runs.db", "summary", {columns = {"step", "loss"}})
// Rank 0 runs the query and the transaction; on N ranks the planner shards the loaded tensor.
#include <lauxlib.h>
#include <lua.h>

#include <string>
#include <vector>

#include "engine/io/sql.hpp"
#include "engine/session/session.hpp"
#include "engine/telemetry/telemetry.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

void push_strings(lua_State* L, const std::vector<std::string>& v) {
  lua_createtable(L, static_cast<int>(v.size()), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    lua_pushlstring(L, v[i].data(), v[i].size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
}

// opts.columns: a sequence of `want` names.
std::vector<std::string> check_names(lua_State* L, int opts, int64_t want) {
  std::vector<std::string> out;
  if (lua_type(L, opts) == LUA_TTABLE) {
    lua_getfield(L, opts, "columns");
    if (!lua_isnil(L, -1)) {
      if (lua_type(L, -1) != LUA_TTABLE)
        arg_error(opts, "option 'columns' must be a sequence of column names");
      const lua_Integer n = luaL_len(L, -1);
      for (lua_Integer i = 1; i <= n; ++i) {
        lua_rawgeti(L, -1, i);
        if (lua_type(L, -1) != LUA_TSTRING || std::string(lua_tostring(L, -1)).empty())
          arg_error(opts,
                    cat_str("option 'columns' must be a sequence of column names (entry ", i, " is not)"));
        out.emplace_back(lua_tostring(L, -1));
        lua_pop(L, 1);
      }
      if (static_cast<int64_t>(out.size()) != want)
        arg_error(opts, cat_str("option 'columns' names ", out.size(), " columns, the tensor has ", want));
    }
    lua_pop(L, 1);
  }
  if (out.empty())
    for (int64_t c = 1; c <= want; ++c) out.push_back(cat_str("c", c));
  return out;
}

}  // namespace

int l_load_sql(lua_State* L) {
  const std::string db = check_path(L, 1);
  const std::string query = check_string(L, 2, "query");
  const Options o(L, 3, {"dtype", "name"});
  const std::optional<std::string> name = o.string("name");
  if (name) user_check(is_identifier(*name), "'", *name, "' is not a valid tensor name (use an identifier)");
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  io::SqlTable t = io::read_sql(db, query, check_table_dtype(o.dtype().value_or(DType::F32), "a SQL table"));
  const View v = t.value->view();
  NodeRef n = make_source(std::move(t.value), v.shape, v.dtype);
  if (name) s.env().bind(*name, n);
  push_tensor(L, std::move(n), name.value_or(""));
  push_strings(L, t.names);
  push_strings(L, t.skipped);
  return 3;
}

int l_save_sql(lua_State* L) {
  const NodeRef x = table_values(check_tensor_like(L, 1), "a SQL table");
  const std::string db = check_path(L, 2);
  const std::string table = check_string(L, 3, "table name");
  user_check(!table.empty(), "the table name is empty");
  const Options o(L, 4, {"columns", "append"});
  user_check(x->shape.size() == 1 || x->shape.size() == 2, "a table holds a 1-D or 2-D tensor, got shape ",
             shape_str(x->shape));
  const std::vector<std::string> names = check_names(L, 4, x->shape.size() == 2 ? x->shape[1] : 1);
  const bool append = o.boolean("append").value_or(false);
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  observe(L, {x});
  io::write_sql(db, table, x->value->view(), names, append);
  return 0;
}

}  // namespace tapestry::lua
