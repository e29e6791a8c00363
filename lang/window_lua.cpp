// Window and padding bindings: x:pad, x:roll, tp.stencil, tp.conv2d, tp.maxpool2d, tp.avgpool2d.
//   x:pad({{1, 1}, {2, 0}}, {mode = "reflect"})      -- or the flat {1, 1, 2, 0}
//   tp.stencil(u, {{0, 1, 0}, {1, -4, 1}, {0, 1, 0}}, {boundary = "periodic"})
//   tp.conv2d(x, w, {stride = 2, padding = {1, 0}, groups = 2})
#include <lauxlib.h>
#include <lua.h>

#include <cmath>

#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

int rank_of(const NodeRef& x) { return static_cast<int>(x->shape.size()); }

// The options table: the last argument when it is a table that is not a tensor. `first` is
// the first position it may take.
int options_index(lua_State* L, int first) {
  return lua_gettop(L) >= first && lua_type(L, first) == LUA_TTABLE && !is_tensor(L, first) ? first : 0;
}

// An integer at the top of the stack, for entry `what` of argument `arg`; pops it.
int64_t pop_int(lua_State* L, int arg, const std::string& what) {
  const int top = lua_gettop(L);
  const double v = lua_type(L, top) == LUA_TNUMBER ? lua_tonumber(L, top) : 0.5;
  if (!fits_int64(v) || v != std::floor(v)) {
    const std::string got = lua_type(L, top) == LUA_TNUMBER ? num_str(v) : std::string(luaL_typename(L, top));
    lua_pop(L, 1);
    arg_error(arg, cat_str(what, " must be an integer, got ", got));
  }
  const int64_t r = lua_isinteger(L, top) ? lua_tointeger(L, top) : static_cast<int64_t>(v);
  lua_pop(L, 1);
  return r;
}

// opts[key] as a number n (= {n, n}) or a pair {a, b}; `fallback` when absent.
void pair_option(lua_State* L, int oi, const char* key, const int64_t fallback[2], int64_t out[2]) {
  out[0] = fallback[0];
  out[1] = fallback[1];
  if (oi == 0) return;
  lua_getfield(L, oi, key);
  const int top = lua_gettop(L);
  if (lua_isnil(L, top)) {
    lua_pop(L, 1);
  } else if (lua_type(L, top) == LUA_TNUMBER) {
    out[0] = out[1] = pop_int(L, oi, cat_str("option '", key, "'"));
  } else if (lua_type(L, top) == LUA_TTABLE && !is_tensor(L, top) && luaL_len(L, top) == 2) {
    for (int i = 0; i < 2; ++i) {
      lua_geti(L, top, i + 1);
      out[i] = pop_int(L, oi, cat_str("option '", key, "' entry ", i + 1));
    }
    lua_pop(L, 1);
  } else {
    const std::string got = luaL_typename(L, top);
    lua_pop(L, 1);
    arg_error(oi, cat_str("option '", key, "' must be a number or a pair {h, w}, got ", got));
  }
}

// The kernel size of a pool: a number k (= {k, k}) or {kh, kw}.
void kernel_arg(lua_State* L, int arg, int64_t out[2]) {
  if (lua_type(L, arg) == LUA_TNUMBER) {
    out[0] = out[1] = check_int(L, arg);
    return;
  }
  if (lua_type(L, arg) != LUA_TTABLE || is_tensor(L, arg) || luaL_len(L, arg) != 2)
    type_error(L, arg, "kernel size (a number or {kh, kw})");
  for (int i = 0; i < 2; ++i) {
    lua_geti(L, arg, i + 1);
    out[i] = pop_int(L, arg, cat_str("kernel size entry ", i + 1));
  }
}

// pads: {{before, after}, ...} one pair per dim, or flat {b1, a1, b2, a2, ...}.
void pads_arg(lua_State* L, int arg, int rank, std::vector<int64_t>& before, std::vector<int64_t>& after) {
  if (lua_type(L, arg) != LUA_TTABLE || is_tensor(L, arg))
    type_error(L, arg, "pads ({{before, after}, ...} or {b1, a1, b2, a2, ...})");
  const lua_Integer n = luaL_len(L, arg);
  lua_geti(L, arg, 1);
  const bool nested = lua_type(L, -1) == LUA_TTABLE;
  lua_pop(L, 1);
  std::vector<int64_t> flat;
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, arg, i);
    if (!nested) {
      flat.push_back(pop_int(L, arg, cat_str("pads entry ", i)));
      continue;
    }
    const int e = lua_gettop(L);
    if (lua_type(L, e) != LUA_TTABLE || luaL_len(L, e) != 2)
      arg_error(arg, cat_str("pads entry ", i, " must be a pair {before, after}"));
    for (int k = 1; k <= 2; ++k) {
      lua_geti(L, e, k);
      flat.push_back(pop_int(L, arg, cat_str("pads entry ", i, "[", k, "]")));
    }
    lua_pop(L, 1);
  }
  if (static_cast<int>(flat.size()) != 2 * rank)
    arg_error(arg, cat_str("pads must give {before, after} for each of the ", rank, " dimensions, got ",
                           flat.size(), " numbers"));
  for (int d = 0; d < rank; ++d) {
    before.push_back(flat[2 * d]);
    after.push_back(flat[2 * d + 1]);
  }
}

}  // namespace

int l_pad(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  std::vector<int64_t> before, after;
  pads_arg(L, 2, rank_of(x), before, after);
  Options o(L, 3, {"mode", "value"});
  const std::string mode = o.string("mode").value_or("constant");
  build::PadMode m;
  if (mode == "constant") m = build::PadMode::Constant;
  else if (mode == "reflect") m = build::PadMode::Reflect;
  else if (mode == "periodic") m = build::PadMode::Periodic;
  else arg_error(3, cat_str("unknown mode '", mode, "' (expected constant, reflect or periodic)"));
  if (o.has("value") && m != build::PadMode::Constant)
    arg_error(3, cat_str("option 'value' only applies to mode 'constant', not '", mode, "'"));
  push_tensor(L, build::pad(x, before, after, m, o.number("value").value_or(0)));
  return 1;
}

int l_roll(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const int64_t shift = check_int(L, 2);
  std::optional<int> d;
  if (!lua_isnoneornil(L, 3)) d = check_dim(L, 3, rank_of(x));
  push_tensor(L, build::roll(x, shift, d));
  return 1;
}

int l_stencil(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const NodeRef k = check_tensor_like(L, 2);
  Options o(L, 3, {"boundary"});
  const std::string b = o.string("boundary").value_or("zero");
  build::Boundary bd;
  if (b == "zero") bd = build::Boundary::Zero;
  else if (b == "periodic") bd = build::Boundary::Periodic;
  else if (b == "reflect") bd = build::Boundary::Reflect;
  else arg_error(3, cat_str("unknown boundary '", b, "' (expected zero, periodic or reflect)"));
  push_tensor(L, build::stencil(x, k, bd));
  return 1;
}

int l_conv2d(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const NodeRef w = check_tensor(L, 2);
  const int oi = options_index(L, 3);
  Options o(L, 3, {"stride", "padding", "dilation", "groups"});
  build::Conv2dOptions c;
  const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  pair_option(L, oi, "stride", one, c.stride);
  pair_option(L, oi, "padding", zero, c.padding);
  pair_option(L, oi, "dilation", one, c.dilation);
  c.groups = o.integer("groups").value_or(1);
  push_tensor(L, build::conv2d(x, w, c));
  return 1;
}

template <Op op> int l_pool2d(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  int64_t kernel[2], stride[2], padding[2];
  kernel_arg(L, 2, kernel);
  const int oi = options_index(L, 3);
  Options o(L, 3, {"stride", "padding"});
  const int64_t zero[2] = {0, 0};
  pair_option(L, oi, "stride", kernel, stride);
  pair_option(L, oi, "padding", zero, padding);
  push_tensor(L, build::pool2d(op, x, kernel, stride, padding));
  return 1;
}

template int l_pool2d<Op::MaxPool2d>(lua_State* L);
template int l_pool2d<Op::AvgPool2d>(lua_State* L);

}  // namespace tapestry::lua
