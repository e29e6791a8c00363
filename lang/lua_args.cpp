#include "lang/lua_args.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "engine/ir/value.hpp"
#include "engine/store/stored_tensor.hpp"
#include "lang/convert.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry {

void arg_error(int arg, const std::string& msg) { throw ArgError(arg, msg); }

void type_error(lua_State* L, int arg, const char* expected) {
  const char* got = lua_isnone(L, arg) ? "no value" : luaL_typename(L, arg);
  arg_error(arg, cat_str(expected, " expected, got ", got));
}

namespace {

// Lua sees a Tensor as a few bytes of userdata, so without help its collector would let
// gigabytes of dead tensors pile up in a loop (a heat-equation step allocates a whole grid).
// Every MiB the kernels allocate, or the ranks store for this process (a driver's job), is
// charged to the collector as if Lua had allocated it.
void collect_in_proportion(lua_State* L) {
  static uint64_t charged = 0;
  const uint64_t allocated = Buffer::total_allocated() + stored_bytes_registered();
  if (allocated - charged < (uint64_t{1} << 20)) return;
  const uint64_t kb = (allocated - charged) >> 10;
  charged = allocated;
  lua_gc(L, LUA_GCSTEP, static_cast<int>(std::min<uint64_t>(kb, 1u << 30)));
}

// An allocation met the memory budget since the last call (the session spilled, or tried):
// dead tensors Lua has not collected yet would be spilled next, written to disk for nothing
// (a loop's previous state, u in u = f(u)). A full collection before the next call frees
// them instead; between calls no evaluation is running, so finalizers are harmless here.
void collect_under_pressure(lua_State* L) {
  static uint64_t seen = 0;
  const uint64_t events = memory_pressure_events();
  if (events == seen) return;
  seen = events;
  lua_gc(L, LUA_GCCOLLECT);
}

// The single C++ -> Lua error boundary. Messages are built inside the catch
// blocks, and lua_error is raised only after leaving them (Lua's own error is a
// C++ exception too, and must not be thrown from inside a handler of ours).
int guarded(lua_State* L) {
  auto fn = reinterpret_cast<LuaFn>(lua_touserdata(L, lua_upvalueindex(1)));
  // The function's name only when an error needs it: every Tensor operation passes here.
  const auto name = [L] { return lua_tostring(L, lua_upvalueindex(2)); };
  std::string msg;
  try {
    collect_under_pressure(L);
    const int results = fn(L);
    collect_in_proportion(L);
    return results;
  } catch (const ArgError& e) {
    msg = cat_str("bad argument #", e.arg(), " to '", name(), "' (", e.what(), ")");
  } catch (const Error& e) {
    msg = cat_str(name(), ": ", e.what());
  } catch (const Cancelled& e) {
    msg = cat_str(name(), ": ", e.what());
  } catch (const InternalError& e) {
    msg = cat_str(name(), ": ", e.what());
  } catch (const std::bad_alloc&) {
    msg = cat_str(name(), ": out of memory");
  } catch (const std::exception& e) {
    msg = cat_str(name(), ": ", e.what());
  }
  lua_pushstring(L, msg.c_str());
  return lua_error(L);
}

}  // namespace

void push_guarded(lua_State* L, LuaFn fn, std::string_view name) {
  lua_pushlightuserdata(L, reinterpret_cast<void*>(fn));
  lua_pushlstring(L, name.data(), name.size());
  lua_pushcclosure(L, guarded, 2);
}

bool is_tensor(lua_State* L, int arg) { return to_tensor_handle(L, arg) != nullptr; }

NodeRef check_tensor(lua_State* L, int arg) {
  TensorHandle* h = to_tensor_handle(L, arg);
  if (!h) type_error(L, arg, "Tensor");
  if (h->rec) promote(*h);
  user_check(h->node != nullptr, "argument #", arg, " is a released tensor (used after release())");
  return h->node;
}

build::Operand check_operand(lua_State* L, int arg) {
  switch (lua_type(L, arg)) {
    case LUA_TBOOLEAN: return build::Operand::boolean(lua_toboolean(L, arg));
    case LUA_TNUMBER:
      if (lua_isinteger(L, arg)) return build::Operand::integer_number(lua_tointeger(L, arg));
      return build::Operand::number(lua_tonumber(L, arg));
    case LUA_TTABLE: return build::Operand(tensor_from_lua(L, arg, std::nullopt));
    default:
      if (TensorHandle* h = to_tensor_handle(L, arg)) {
        if (h->rec) promote(*h);
        user_check(h->node != nullptr, "argument #", arg, " is a released tensor (used after release())");
        return build::Operand(h->node.get());
      }
      type_error(L, arg, "Tensor or number");
  }
}

NodeRef check_tensor_like(lua_State* L, int arg) {
  const build::Operand o = check_operand(L, arg);  // a Tensor, or a number or table made one
  return o.weak ? build::scalar(o, scalar_default_dtype(o.kind)) : o.node;
}

int64_t check_int(lua_State* L, int arg) {
  if (lua_isinteger(L, arg)) return lua_tointeger(L, arg);
  if (lua_type(L, arg) != LUA_TNUMBER) type_error(L, arg, "integer");
  const double d = lua_tonumber(L, arg);
  if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.007199254740992e15)
    arg_error(arg, cat_str("integer expected, got ", num_str(d)));
  return static_cast<int64_t>(d);
}

std::string check_string(lua_State* L, int arg, const char* what) {
  if (lua_type(L, arg) != LUA_TSTRING) type_error(L, arg, what);
  size_t n = 0;
  const char* p = lua_tolstring(L, arg, &n);
  std::string s(p, n);
  if (s.find('\0') != std::string::npos)
    arg_error(arg, cat_str(what, " must not contain NUL bytes, got ", quoted(s)));
  return s;
}

double check_number(lua_State* L, int arg) {
  if (lua_type(L, arg) != LUA_TNUMBER) type_error(L, arg, "number");
  return lua_tonumber(L, arg);
}

Shape check_shape_arg(lua_State* L, int arg) {
  if (lua_type(L, arg) == LUA_TNUMBER) return Shape{check_int(L, arg)};
  if (lua_type(L, arg) != LUA_TTABLE || is_tensor(L, arg)) type_error(L, arg, "shape (table of sizes)");
  Shape s;
  const lua_Integer n = luaL_len(L, arg);
  if (n > kMaxDims) arg_error(arg, cat_str("a shape of ", n, " dims; a tensor has at most ", kMaxDims));
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, arg, i);
    const int top = lua_gettop(L);
    if (lua_type(L, top) != LUA_TNUMBER) {
      const std::string got = luaL_typename(L, top);
      lua_pop(L, 1);
      arg_error(arg, cat_str("shape entry ", i, " must be an integer, got ", got));
    }
    double d = lua_tonumber(L, top);
    const bool integral = lua_isinteger(L, top) || (std::isfinite(d) && d == std::floor(d));
    const bool in_range = lua_isinteger(L, top) || fits_int64(d);  // checked before converting
    const int64_t v = lua_isinteger(L, top) ? lua_tointeger(L, top) : in_range ? static_cast<int64_t>(d) : 0;
    lua_pop(L, 1);
    if (!integral) arg_error(arg, cat_str("shape entry ", i, " must be an integer, got ", num_str(d)));
    if (!in_range) arg_error(arg, cat_str("shape entry ", i, " is out of range, got ", num_str(d)));
    s.push_back(v);
  }
  build::check_shape(s, "shape");
  return s;
}

int check_dim(lua_State* L, int arg, int rank) {
  const int64_t d = check_int(L, arg);
  return normalize_dim(d, rank);
}

std::vector<int> check_dims(lua_State* L, int arg, int rank) {
  std::vector<int> dims;
  if (lua_isnoneornil(L, arg)) return dims;  // all
  if (lua_type(L, arg) == LUA_TNUMBER) {
    dims.push_back(check_dim(L, arg, rank));
    return dims;
  }
  if (lua_type(L, arg) != LUA_TTABLE || is_tensor(L, arg)) type_error(L, arg, "dims (number or table)");
  const lua_Integer n = luaL_len(L, arg);
  user_check(n >= 1, "dims must not be empty (use nil for all dims)");
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, arg, i);
    const int top = lua_gettop(L);
    if (lua_type(L, top) != LUA_TNUMBER) {
      lua_pop(L, 1);
      arg_error(arg, cat_str("dims entry ", i, " must be an integer"));
    }
    const int d = check_dim(L, top, rank);
    lua_pop(L, 1);
    dims.push_back(d);
  }
  return dims;
}

bool is_options_table(lua_State* L, int arg) {
  if (lua_type(L, arg) != LUA_TTABLE || is_tensor(L, arg)) return false;
  lua_geti(L, arg, 1);
  const bool seq = !lua_isnil(L, -1);
  lua_pop(L, 1);
  return !seq;
}

Options::Options(lua_State* L, int arg, std::initializer_list<const char*> allowed) : L_(L), arg_(0) {
  if (lua_isnoneornil(L, arg)) return;
  if (lua_type(L, arg) != LUA_TTABLE || is_tensor(L, arg)) type_error(L, arg, "options table");
  arg_ = lua_absindex(L, arg);
  lua_pushnil(L);
  while (lua_next(L, arg_) != 0) {
    lua_pop(L, 1);  // value
    std::string key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
    bool known = false;
    std::string expected;
    for (const char* a : allowed) {
      known = known || key == a;
      expected += expected.empty() ? a : std::string(", ") + a;
    }
    if (!known) {
      if (lua_type(L, -1) != LUA_TSTRING) key = cat_str("[", luaL_typename(L, -1), "]");
      lua_pop(L, 1);
      arg_error(arg_, cat_str("unknown option '", key, "'",
                              expected.empty() ? " (this function takes no options)"
                                               : " (expected one of: " + expected + ")"));
    }
  }
}

void Options::push(const char* key) const {
  if (arg_ == 0) lua_pushnil(L_);
  else lua_getfield(L_, arg_, key);
}

bool Options::has(const char* key) const {
  push(key);
  const bool r = !lua_isnil(L_, -1);
  lua_pop(L_, 1);
  return r;
}

std::optional<std::string> Options::string(const char* key) const {
  push(key);
  std::optional<std::string> r;
  if (lua_type(L_, -1) == LUA_TSTRING) {
    size_t n = 0;
    const char* p = lua_tolstring(L_, -1, &n);
    r = std::string(p, n);
  }
  const bool bad = !lua_isnil(L_, -1) && !r;
  const std::string got = luaL_typename(L_, -1);
  lua_pop(L_, 1);
  if (bad) arg_error(arg_, cat_str("option '", key, "' must be a string, got ", got));
  if (r->find('\0') != std::string::npos)
    arg_error(arg_, cat_str("option '", key, "' must not contain NUL bytes, got ", quoted(*r)));
  return r;
}

std::optional<DType> Options::dtype() const {
  auto s = string("dtype");
  if (!s) return std::nullopt;
  auto t = dtype_from_name(*s);
  if (!t) arg_error(arg_, cat_str("unknown dtype '", *s, "' (expected one of ", dtype_names(), ")"));
  return t;
}

std::optional<double> Options::number(const char* key) const {
  push(key);
  std::optional<double> r;
  if (lua_type(L_, -1) == LUA_TNUMBER) r = lua_tonumber(L_, -1);
  const bool bad = !lua_isnil(L_, -1) && !r;
  const std::string got = luaL_typename(L_, -1);
  lua_pop(L_, 1);
  if (bad) arg_error(arg_, cat_str("option '", key, "' must be a number, got ", got));
  return r;
}

std::optional<build::Operand> Options::scalar(const char* key) const {
  push(key);
  std::optional<build::Operand> r;
  const int t = lua_type(L_, -1);
  if (t == LUA_TNUMBER || t == LUA_TBOOLEAN) r = check_operand(L_, -1);
  const std::string got = luaL_typename(L_, -1);
  lua_pop(L_, 1);
  if (!r && t != LUA_TNIL)
    arg_error(arg_, cat_str("option '", key, "' must be a number or boolean, got ", got));
  return r;
}

std::optional<int64_t> Options::integer(const char* key) const {
  auto d = number(key);
  if (!d) return std::nullopt;
  if (!fits_int64(*d) || *d != std::floor(*d))
    arg_error(arg_, cat_str("option '", key, "' must be an integer, got ", *d));
  return static_cast<int64_t>(*d);
}

std::optional<bool> Options::boolean(const char* key) const {
  push(key);
  std::optional<bool> r;
  if (lua_type(L_, -1) == LUA_TBOOLEAN) r = lua_toboolean(L_, -1);
  const bool bad = !lua_isnil(L_, -1) && !r;
  const std::string got = luaL_typename(L_, -1);
  lua_pop(L_, 1);
  if (bad) arg_error(arg_, cat_str("option '", key, "' must be a boolean, got ", got));
  return r;
}

std::string check_path(lua_State* L, int arg) {
  if (lua_type(L, arg) != LUA_TSTRING) type_error(L, arg, "string");
  size_t n = 0;
  const char* s = lua_tolstring(L, arg, &n);
  const std::string path(s, n);
  if (path.empty() || path.find('\0') != std::string::npos)
    arg_error(arg, "a path must be a non-empty string without NUL bytes");
  return path;
}

}  // namespace tapestry
