// Contractions by index letters: tp.einsum, tp.einsum_path, tp.tensordot, tp.outer.
//   local y = tp.einsum("ij,jk,kl->il", a, b, c)
//   local order, naive, flops = tp.einsum_path("ij,jk,kl->il", a, b, c)
//   local z = tp.tensordot(a, b, {{2}, {1}})     -- = a:matmul(b)
#include <lauxlib.h>
#include <lua.h>

#include <cmath>
#include <string>

#include "engine/ir/build/einsum.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

// tp.einsum(spec, a, b, ...): the spec, then every remaining argument is an operand.
std::string einsum_args(lua_State* L, std::vector<NodeRef>& xs) {
  std::string spec = check_string(L, 1, "spec string");
  const int top = lua_gettop(L);
  for (int i = 2; i <= top; ++i) xs.push_back(check_tensor_like(L, i));
  return spec;
}

// Flops as a Lua integer while exact, so scripts print "33554432" rather than "3.3554432e+07".
void push_flops(lua_State* L, double f) {
  if (f < 9.0e15) lua_pushinteger(L, static_cast<lua_Integer>(std::llround(f)));
  else lua_pushnumber(L, f);
}

// One side of tensordot's {{a dims}, {b dims}}: a number or a sequence, 1-based.
std::vector<int> dims_entry(lua_State* L, int side, int rank, const char* which) {
  std::vector<int> dims;
  lua_geti(L, 3, side);
  const int t = lua_gettop(L);
  auto entry = [&](int idx, const std::string& what) {
    if (!lua_isinteger(L, idx)) {
      lua_settop(L, t - 1);
      arg_error(3, cat_str(what, " must be an integer"));
    }
    dims.push_back(normalize_dim(lua_tointeger(L, idx), rank));
  };
  if (lua_type(L, t) == LUA_TNUMBER) {
    entry(t, cat_str("dims of ", which));
  } else if (lua_type(L, t) == LUA_TTABLE && !is_tensor(L, t)) {
    const lua_Integer n = luaL_len(L, t);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_geti(L, t, i);
      entry(lua_gettop(L), cat_str("dims of ", which, " entry ", i));
      lua_pop(L, 1);
    }
  } else {
    lua_settop(L, t - 1);
    arg_error(3, cat_str("dims of ", which, " must be a number or a sequence"));
  }
  lua_settop(L, t - 1);
  return dims;
}

}  // namespace

int l_einsum(lua_State* L) {
  std::vector<NodeRef> xs;
  const std::string spec = einsum_args(L, xs);
  push_tensor(L, build::einsum(spec, xs));
  return 1;
}

// Returns the order as opt_einsum does (1-based pairs of positions in the current list, the
// result appended at the end; each pair also carries .spec), the naive and the chosen flops.
int l_einsum_path(lua_State* L) {
  std::vector<NodeRef> xs;
  const std::string spec = einsum_args(L, xs);
  const einsum::Path p = build::einsum_path(spec, xs);
  lua_createtable(L, static_cast<int>(p.steps.size()), 0);
  for (size_t s = 0; s < p.steps.size(); ++s) {
    lua_createtable(L, 2, 1);
    lua_pushinteger(L, p.steps[s].first + 1);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, p.steps[s].second + 1);
    lua_rawseti(L, -2, 2);
    lua_pushstring(L, p.step_specs[s].c_str());
    lua_setfield(L, -2, "spec");
    lua_rawseti(L, -2, static_cast<lua_Integer>(s + 1));
  }
  push_flops(L, p.naive_flops);
  push_flops(L, p.flops);
  return 3;
}

// tp.tensordot(a, b [,dims]): dims = n (last n of a with first n of b; default 2, as numpy)
// or {{a dims}, {b dims}}.
int l_tensordot(lua_State* L) {
  const NodeRef a = check_tensor_like(L, 1);
  const NodeRef b = check_tensor_like(L, 2);
  const int ra = static_cast<int>(a->shape.size()), rb = static_cast<int>(b->shape.size());
  std::vector<int> da, db;
  if (lua_isnoneornil(L, 3) || lua_type(L, 3) == LUA_TNUMBER) {
    const int64_t n = lua_isnoneornil(L, 3) ? 2 : check_int(L, 3);
    user_check(n >= 0 && n <= ra && n <= rb, "cannot sum the last ", n, " dims of ", shape_str(a->shape),
               " with the first ", n, " of ", shape_str(b->shape));
    for (int i = 0; i < n; ++i) {
      da.push_back(ra - static_cast<int>(n) + i);
      db.push_back(i);
    }
  } else if (lua_type(L, 3) == LUA_TTABLE && !is_tensor(L, 3)) {
    user_check(luaL_len(L, 3) == 2, "dims must be a number or {{a dims}, {b dims}}");
    da = dims_entry(L, 1, ra, "a");
    db = dims_entry(L, 2, rb, "b");
  } else {
    type_error(L, 3, "number or {{a dims}, {b dims}}");
  }
  push_tensor(L, build::tensordot(a, b, da, db));
  return 1;
}

int l_outer(lua_State* L) {
  const NodeRef a = check_tensor_like(L, 1);
  const NodeRef b = check_tensor_like(L, 2);
  push_tensor(L, build::outer(a, b));
  return 1;
}

}  // namespace tapestry::lua
