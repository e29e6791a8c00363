// Structure: tp.flip, diag, diagonal, tril, triu, trace (of a matrix), meshgrid.
#include <lauxlib.h>
#include <lua.h>

#include "engine/ir/build/builders.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {
int rank_of(const NodeRef& x) { return static_cast<int>(x->shape.size()); }
int64_t opt_int(lua_State* L, int arg, int64_t fallback) {
  return lua_isnoneornil(L, arg) ? fallback : check_int(L, arg);
}
}  // namespace

int l_flip(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  std::vector<int> dims = check_dims(L, 2, rank_of(x));
  if (lua_isnoneornil(L, 2))
    for (int d = 0; d < rank_of(x); ++d) dims.push_back(d);
  push_tensor(L, build::flip(x, dims));
  return 1;
}

int l_diag(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  push_tensor(L, build::diag(x, opt_int(L, 2, 0)));
  return 1;
}

int l_diagonal(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  user_check(rank_of(x) >= 2, "x must have at least 2 dims, got shape ", shape_str(x->shape));
  const int d1 = lua_isnoneornil(L, 3) ? 0 : check_dim(L, 3, rank_of(x));
  const int d2 = lua_isnoneornil(L, 4) ? 1 : check_dim(L, 4, rank_of(x));
  push_tensor(L, build::diagonal(x, opt_int(L, 2, 0), d1, d2));
  return 1;
}

int l_tril(lua_State* L) {
  push_tensor(L, build::tril(check_tensor(L, 1), opt_int(L, 2, 0)));
  return 1;
}

int l_triu(lua_State* L) {
  push_tensor(L, build::triu(check_tensor(L, 1), opt_int(L, 2, 0)));
  return 1;
}

int l_matrix_trace(lua_State* L) {
  push_tensor(L, build::trace(check_tensor(L, 1)));
  return 1;
}

// tp.meshgrid(x1, x2, ... [,opts]) or tp.meshgrid({x1, x2, ...} [,opts]): one tensor per input.
int l_meshgrid(lua_State* L) {
  const int top = lua_gettop(L);
  const bool listed = lua_type(L, 1) == LUA_TTABLE && !is_tensor(L, 1);
  const int last = top >= 2 && is_options_table(L, top) ? top - 1 : top;
  Options o(L, last < top ? top : top + 1, {"indexing"});
  const std::string indexing = o.string("indexing").value_or("xy");
  if (indexing != "xy" && indexing != "ij")
    arg_error(top, cat_str("indexing must be 'xy' or 'ij', got '", indexing, "'"));
  std::vector<NodeRef> xs;
  if (listed) {
    const lua_Integer n = luaL_len(L, 1);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_geti(L, 1, i);
      xs.push_back(check_tensor_like(L, lua_gettop(L)));
      lua_pop(L, 1);
    }
  } else {
    for (int i = 1; i <= last; ++i) xs.push_back(check_tensor_like(L, i));
  }
  user_check(!xs.empty(), "needs at least one tensor");
  const std::vector<NodeRef> out = build::meshgrid(xs, indexing == "xy");
  luaL_checkstack(L, static_cast<int>(out.size()), "too many tensors");
  for (const NodeRef& t : out) push_tensor(L, t);
  return static_cast<int>(out.size());
}

}  // namespace tapestry::lua
