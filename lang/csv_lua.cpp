// CSV and TSV files: tp.load_csv, tp.save_csv (engine/io/csv.hpp).
//   local x, names = tp.load_csv("data.csv", {columns = {"x", "y"}, dtype = "f64"})
//   tp.save_csv(x, "out.tsv", {columns = names})           -- a tab for .tsv
// A load indexes the text and each rank parses the rows it reads when observed; a save has
// each rank format and write its own rows (engine/session/sharded_io.hpp).
#include <lauxlib.h>
#include <lua.h>

#include <string>
#include <variant>
#include <vector>

#include "engine/io/csv.hpp"
#include "engine/io/lazy_load.hpp"
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

// opts.delimiter: one character ("," "\t" ";" ...).
char check_delimiter(const Options& o, int opts, char fallback) {
  const std::optional<std::string> d = o.string("delimiter");
  if (!d) return fallback;
  if (d->size() != 1 || *d == "\"" || *d == "\n" || *d == "\r")
    arg_error(opts, cat_str("option 'delimiter' must be one character other than a quote or line end, got '",
                            *d, "'"));
  return (*d)[0];
}

// opts.columns: a sequence of column names or 1-based column numbers (pushes nothing).
std::vector<std::variant<std::string, int64_t>> check_columns(lua_State* L, int opts, bool numbers) {
  std::vector<std::variant<std::string, int64_t>> out;
  if (opts == 0 || lua_type(L, opts) != LUA_TTABLE) return out;
  lua_getfield(L, opts, "columns");
  const int t = lua_gettop(L);
  if (lua_isnil(L, t)) {
    lua_pop(L, 1);
    return out;
  }
  const char* want = numbers ? "a sequence of column names or numbers" : "a sequence of column names";
  if (lua_type(L, t) != LUA_TTABLE) arg_error(opts, cat_str("option 'columns' must be ", want));
  const lua_Integer n = luaL_len(L, t);
  if (n == 0) arg_error(opts, "option 'columns' is empty");
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_rawgeti(L, t, i);
    if (lua_type(L, -1) == LUA_TSTRING) {
      out.emplace_back(std::string(lua_tostring(L, -1)));
    } else if (numbers && lua_isinteger(L, -1)) {
      out.emplace_back(static_cast<int64_t>(lua_tointeger(L, -1)) - 1);
    } else {
      arg_error(opts, cat_str("option 'columns' must be ", want, " (entry ", i, " is a ",
                              luaL_typename(L, -1), ")"));
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return out;
}

int opts_arg(lua_State* L, int arg) { return lua_gettop(L) >= arg && !lua_isnil(L, arg) ? arg : 0; }

}  // namespace

DType check_table_dtype(DType t, const char* format) {
  user_check(t == DType::Bool || t == DType::I32 || t == DType::I64 || t == DType::F32 || t == DType::F64,
             format, " reads bool, i32, i64, f32 and f64, not ", dtype_name(t), " (load as one and cast)");
  return t;
}

NodeRef table_values(const NodeRef& x, const char* format) {
  user_check(!is_complex(x->dtype), format, " holds real numbers, not ", dtype_name(x->dtype),
             " (save x:real() and x:imag())");
  if (x->dtype == DType::I8 || x->dtype == DType::U8) return build::cast(x, DType::I64);  // exact
  if (is_half(x->dtype)) return build::cast(x, DType::F64);                               // exact
  return x;
}

int l_load_csv(lua_State* L) {
  const std::string path = check_path(L, 1);
  const Options o(L, 2, {"header", "delimiter", "dtype", "columns", "name"});
  io::CsvOptions co;
  co.delimiter = check_delimiter(o, 2, io::default_delimiter(path));
  co.header = o.boolean("header");
  co.dtype = check_table_dtype(o.dtype().value_or(DType::F32), "a CSV file");
  co.columns = check_columns(L, opts_arg(L, 2), true);
  const std::optional<std::string> name = o.string("name");
  if (name) user_check(is_identifier(*name), "'", *name, "' is not a valid tensor name (use an identifier)");
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  // Lazy: the rows are found now (one pass, no number parsed but the first row's); each rank
  // parses its own rows when an observation reads them.
  const io::CsvIndex ix = io::index_csv(path, co);
  NodeRef n = io::lazy_csv(path, ix);
  if (name) s.env().bind(*name, n);
  push_tensor(L, std::move(n), name.value_or(""));
  lua_createtable(L, static_cast<int>(ix.names.size()), 0);
  for (size_t i = 0; i < ix.names.size(); ++i) {
    lua_pushlstring(L, ix.names[i].data(), ix.names[i].size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 2;
}

int l_save_csv(lua_State* L) {
  const NodeRef x = table_values(check_tensor_like(L, 1), "a CSV file");
  const std::string path = check_path(L, 2);
  const Options o(L, 3, {"delimiter", "columns"});
  user_check(x->shape.size() == 1 || x->shape.size() == 2, "a CSV file holds a 1-D or 2-D tensor, got shape ",
             shape_str(x->shape));
  const char delim = check_delimiter(o, 3, io::default_delimiter(path));
  std::vector<std::string> names;
  for (const auto& c : check_columns(L, opts_arg(L, 3), false)) names.push_back(std::get<std::string>(c));
  const int64_t cols = x->shape.size() == 2 ? x->shape[1] : 1;
  if (!names.empty() && static_cast<int64_t>(names.size()) != cols)
    arg_error(3, cat_str("option 'columns' names ", names.size(), " columns, x of shape ",
                         shape_str(x->shape), " has ", cols));
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  const NodeRef part = computed_for_save(L, {x})[0];
  if (is_stored(L, part)) {
    io::save_csv_sharded(s, path, part, delim, names);  // each rank formats and writes its rows
  } else {
    const SaveProgress bar(numel(x->shape) * dtype_size(x->dtype));
    io::write_csv(path, part->value->view(), delim, names);
  }
  return 0;
}

}  // namespace tapestry::lua
