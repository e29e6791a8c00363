// Attributes and chunk shapes of stored arrays, between Lua and engine/io (attrs_lua.hpp).
#include "lang/attrs_lua.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <utility>

#include "lang/lua_args.hpp"

namespace tapestry::lua {

void push_attrs(lua_State* L, const io::Attrs& attrs) {
  lua_createtable(L, 0, static_cast<int>(attrs.size()));
  for (const auto& [k, v] : attrs) {
    if (const std::string* s = std::get_if<std::string>(&v)) {
      lua_pushlstring(L, s->data(), s->size());
    } else {
      const std::vector<double>& n = std::get<std::vector<double>>(v);
      auto push_num = [L](double d) {
        if (d == static_cast<double>(static_cast<lua_Integer>(d)) && d > -9.0e15 && d < 9.0e15)
          lua_pushinteger(L, static_cast<lua_Integer>(d));
        else lua_pushnumber(L, d);
      };
      if (n.size() == 1) {
        push_num(n[0]);
      } else {
        lua_createtable(L, static_cast<int>(n.size()), 0);
        for (size_t i = 0; i < n.size(); ++i) {
          push_num(n[i]);
          lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
        }
      }
    }
    lua_setfield(L, -2, k.c_str());
  }
}

// opts.attrs: name -> number, string or sequence of numbers.
io::Attrs check_attrs(lua_State* L, int opts) {
  io::Attrs out;
  if (lua_type(L, opts) != LUA_TTABLE) return out;
  lua_getfield(L, opts, "attrs");
  const int t = lua_gettop(L);
  if (!lua_isnil(L, t)) {
    if (lua_type(L, t) != LUA_TTABLE) arg_error(opts, "option 'attrs' must be a table");
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING) arg_error(opts, "option 'attrs' must have string keys");
      const std::string k = lua_tostring(L, -2);
      if (lua_type(L, -1) == LUA_TSTRING) {
        out[k] = std::string(lua_tostring(L, -1));
      } else if (lua_type(L, -1) == LUA_TNUMBER) {
        out[k] = std::vector<double>{lua_tonumber(L, -1)};
      } else if (lua_type(L, -1) == LUA_TTABLE && luaL_len(L, -1) > 0) {
        std::vector<double> v;
        for (lua_Integer i = 1, n = luaL_len(L, -1); i <= n; ++i) {
          lua_rawgeti(L, -1, i);
          if (lua_type(L, -1) != LUA_TNUMBER)
            arg_error(opts,
                      cat_str("attribute '", k, "' must be a number, a string or a sequence of numbers"));
          v.push_back(lua_tonumber(L, -1));
          lua_pop(L, 1);
        }
        out[k] = std::move(v);
      } else {
        arg_error(opts, cat_str("attribute '", k, "' must be a number, a string or a sequence of numbers"));
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return out;
}

// opts.chunks: one positive size per dimension (clamped to the dimension).
std::vector<int64_t> check_chunks(lua_State* L, int opts, const Shape& shape) {
  std::vector<int64_t> out;
  if (lua_type(L, opts) != LUA_TTABLE) return out;
  lua_getfield(L, opts, "chunks");
  if (!lua_isnil(L, -1)) {
    const bool ok =
        lua_type(L, -1) == LUA_TTABLE && luaL_len(L, -1) == static_cast<lua_Integer>(shape.size());
    if (!ok || shape.empty())
      arg_error(opts,
                cat_str("option 'chunks' must give one size per dimension of shape ", shape_str(shape)));
    for (size_t i = 0; i < shape.size(); ++i) {
      lua_rawgeti(L, -1, static_cast<lua_Integer>(i + 1));
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
        arg_error(opts, cat_str("option 'chunks': entry ", i + 1, " is not a positive integer"));
      out.push_back(std::min<int64_t>(lua_tointeger(L, -1), shape[i]));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return out;
}

}  // namespace tapestry::lua
