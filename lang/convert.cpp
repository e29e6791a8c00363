#include "lang/convert.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <cmath>
#include <limits>

#include "engine/ir/error.hpp"

namespace tapestry {

namespace {

// Walks a nested table, checking that it is rectangular, and collects leaves.
// GCC 12 inlines walk into itself and then reports shape.push_back as writing past an empty
// vector's null data (-Warray-bounds): a false positive of that version's inliner.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
struct Collector {
  lua_State* L = nullptr;
  Shape shape;
  std::vector<double> reals;
  std::vector<int64_t> ints;
  std::vector<bool> exact;  // the leaf was a Lua integer or boolean: ints holds it exactly
  bool all_bool = true;
  bool all_int = true;

  void leaf(int idx, const std::string& where) {
    switch (lua_type(L, idx)) {
      case LUA_TBOOLEAN: {
        const bool b = lua_toboolean(L, idx);
        reals.push_back(b);
        ints.push_back(b);
        exact.push_back(true);
        return;
      }
      case LUA_TNUMBER: {
        all_bool = false;
        if (lua_isinteger(L, idx)) {
          const lua_Integer v = lua_tointeger(L, idx);
          ints.push_back(v);
          reals.push_back(static_cast<double>(v));
          exact.push_back(true);
        } else {
          const double d = lua_tonumber(L, idx);
          all_int = false;
          reals.push_back(d);
          ints.push_back(fits_int64(d) ? static_cast<int64_t>(d) : 0);
          exact.push_back(false);
        }
        return;
      }
      default:
        user_error("element ", where, " is a ", luaL_typename(L, idx), ", expected a number or boolean");
    }
  }

  void walk(int idx, size_t depth, const std::string& where) {
    if (lua_type(L, idx) != LUA_TTABLE) {
      user_check(depth == shape.size(), "ragged table: element ", where, " is not a table like its siblings");
      leaf(idx, where);
      return;
    }
    user_check(depth < 32, "table nested too deeply");
    const lua_Integer n = luaL_len(L, idx);
    // An empty table is a dim of size 0 (numpy's np.array([]) and np.array([[], []])).
    if (depth == shape.size()) {
      user_check(reals.empty(), "ragged table: element ", where, " is a table but its siblings are numbers");
      shape.push_back(n);
    } else {
      user_check(shape[depth] == n, "ragged table: element ", where, " has ", n, " entries, expected ",
                 shape[depth]);
    }
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_geti(L, idx, i);
      walk(lua_gettop(L), depth + 1, where + "[" + std::to_string(i) + "]");
      lua_pop(L, 1);
    }
  }
};
#pragma GCC diagnostic pop

}  // namespace

NodeRef tensor_from_lua(lua_State* L, int idx, std::optional<DType> dtype) {
  idx = lua_absindex(L, idx);
  Collector c;
  c.L = L;
  if (lua_type(L, idx) == LUA_TTABLE) c.walk(idx, 0, "");
  else c.leaf(idx, "");
  // No element at all (tp.tensor{}) is a float, as numpy's np.array([]).
  const DType t = dtype ? *dtype : (c.all_bool && !c.reals.empty() ? DType::Bool : kDefaultFloat);
  auto value = Value::alloc(t, c.shape);
  const size_t n = c.reals.size();
  dispatch_any_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = value->data<T>();
    for (size_t i = 0; i < n; ++i) {
      if constexpr (is_cx<T>) {  // Lua numbers are real: the imaginary parts are 0
        p[i] = T(static_cast<decltype(p[i].re)>(c.reals[i]));
      } else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
        p[i] = T(c.reals[i]);  // rounded once, from the double
      } else if constexpr (std::is_floating_point_v<T>) {
        p[i] = static_cast<T>(c.reals[i]);
      } else if constexpr (std::is_same_v<T, bool>) {
        p[i] = c.reals[i] != 0;
      } else {
        // Integers are checked as integers: math.maxinteger fits an i64, though not a double.
        const bool fits =
            c.exact[i]
                ? (c.ints[i] >= std::numeric_limits<T>::min() && c.ints[i] <= std::numeric_limits<T>::max())
                : (fits_int64(c.reals[i]) && c.ints[i] >= std::numeric_limits<T>::min() &&
                   c.ints[i] <= std::numeric_limits<T>::max());
        if (!fits) {
          if (c.exact[i])
            user_error("cannot store ", c.ints[i], " in a ", dtype_name(t), " tensor (out of range)");
          user_error("cannot store ", c.reals[i], " in a ", dtype_name(t), " tensor (out of range)");
        }
        p[i] = static_cast<T>(c.ints[i]);
      }
    }
  });
  return make_source(std::move(value), c.shape, t);
}

void push_element(lua_State* L, const View& v, int64_t flat) {
  // Row-major flat index -> strided offset.
  int64_t off = 0;
  for (int d = v.rank() - 1; d >= 0; --d) {
    off += (flat % v.shape[d]) * v.strides[d];
    flat /= v.shape[d];
  }
  dispatch_any_dtype(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T x = v.ptr<T>()[off];
    if constexpr (is_cx<T>)
      user_error("a ", dtype_name(v.dtype),
                 " element has no Lua value (Lua numbers are real): read "
                 "x:real() and x:imag()");
    else if constexpr (std::is_same_v<T, bool>) lua_pushboolean(L, x);
    else if constexpr (std::is_integral_v<T>) lua_pushinteger(L, static_cast<lua_Integer>(x));
    else lua_pushnumber(L, static_cast<lua_Number>(x));
  });
}

namespace {
void push_level(lua_State* L, const View& v, int dim, int64_t& flat) {
  if (dim == v.rank()) {
    push_element(L, v, flat++);
    return;
  }
  luaL_checkstack(L, 4, "nested tensor too deep");
  lua_createtable(L, static_cast<int>(v.shape[dim]), 0);
  for (int64_t i = 0; i < v.shape[dim]; ++i) {
    push_level(L, v, dim + 1, flat);
    lua_seti(L, -2, i + 1);
  }
}
}  // namespace

void push_totable(lua_State* L, const View& v) {
  int64_t flat = 0;
  push_level(L, v, 0, flat);
}

}  // namespace tapestry
