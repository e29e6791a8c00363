// Shape bindings: reshape, permute, transpose, t, expand, squeeze, unsqueeze,
// flatten, cat, stack, narrow, select, and x[{...}] slicing.
#include <lauxlib.h>
#include <lua.h>

#include "engine/session/session.hpp"
#include "lang/bindings.hpp"
#include "lang/index_lua.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

int rank_of(const NodeRef& x) { return static_cast<int>(x->shape.size()); }

// A shape given as a table at `arg`, or as numbers from `arg` to the top.
Shape shape_or_varargs(lua_State* L, int arg, bool allow_minus_one) {
  Shape s;
  if (lua_type(L, arg) == LUA_TTABLE && !is_tensor(L, arg)) {
    const lua_Integer n = luaL_len(L, arg);
    if (n > kMaxDims) arg_error(arg, cat_str("a shape of ", n, " dims; a tensor has at most ", kMaxDims));
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_geti(L, arg, i);
      const int top = lua_gettop(L);
      if (lua_type(L, top) != LUA_TNUMBER) {
        lua_pop(L, 1);
        arg_error(arg, cat_str("shape entry ", i, " must be an integer"));
      }
      s.push_back(check_int(L, top));
      lua_pop(L, 1);
    }
  } else {
    if (lua_isnone(L, arg)) type_error(L, arg, "shape (table of sizes)");
    if (lua_gettop(L) - arg + 1 > kMaxDims)
      arg_error(arg,
                cat_str("a shape of ", lua_gettop(L) - arg + 1, " dims; a tensor has at most ", kMaxDims));
    for (int i = arg; i <= lua_gettop(L); ++i) s.push_back(check_int(L, i));
  }
  for (int64_t d : s)
    user_check(d >= 0 || (allow_minus_one && d == -1), "sizes must be at least 0",
               allow_minus_one ? " (or -1)" : "", ", got ", shape_str(s));
  return s;
}

std::vector<NodeRef> tensor_list(lua_State* L, int arg) {
  if (lua_type(L, arg) != LUA_TTABLE || is_tensor(L, arg)) type_error(L, arg, "table of tensors");
  std::vector<NodeRef> xs;
  const lua_Integer n = luaL_len(L, arg);
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, arg, i);
    if (!is_tensor(L, -1)) {
      const std::string got = luaL_typename(L, -1);
      lua_pop(L, 1);
      arg_error(arg, cat_str("entry ", i, " must be a Tensor, got ", got));
    }
    xs.push_back(check_tensor(L, lua_gettop(L)));
    lua_pop(L, 1);
  }
  user_check(!xs.empty(), "expects a non-empty list of tensors");
  return xs;
}

// Resolves a 1-based (negative from the end) index along a dim of `size`.
int64_t resolve_index(int64_t i, int64_t size, int dim, const Shape& shape) {
  const int64_t r = i < 0 ? size + i + 1 : i;
  user_check(r >= 1 && r <= size, "index ", i, " is out of bounds for dimension ", dim + 1, " of size ", size,
             " (shape ", shape_str(shape), ")");
  return r - 1;
}

}  // namespace

int l_reshape(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  push_tensor(L, build::reshape(x, shape_or_varargs(L, 2, true)));
  return 1;
}

int l_permute(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  std::vector<int64_t> p;  // dims, 1-based or negative from the end
  if (lua_type(L, 2) == LUA_TTABLE && !is_tensor(L, 2)) {
    const lua_Integer n = luaL_len(L, 2);
    for (lua_Integer i = 1; i <= n; ++i) {
      lua_geti(L, 2, i);
      const int top = lua_gettop(L);
      if (lua_type(L, top) != LUA_TNUMBER)
        arg_error(2, cat_str("permutation entry ", i, " must be an integer"));
      p.push_back(check_int(L, top));
      lua_pop(L, 1);
    }
  } else {
    for (int i = 2; i <= lua_gettop(L); ++i) p.push_back(check_int(L, i));
  }
  std::vector<int> perm;
  for (int64_t d : p) perm.push_back(normalize_dim(d, rank_of(x)));
  push_tensor(L, build::permute(x, perm));
  return 1;
}

int l_transpose(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const int d1 = check_dim(L, 2, rank_of(x));
  const int d2 = check_dim(L, 3, rank_of(x));
  push_tensor(L, build::transpose(x, d1, d2));
  return 1;
}

int l_t(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  user_check(rank_of(x) <= 2, "expects a tensor of at most 2 dimensions, got ", shape_str(x->shape),
             " (use transpose or permute)");
  push_tensor(L, rank_of(x) < 2 ? x : build::transpose(x, 0, 1));
  return 1;
}

int l_expand(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  push_tensor(L, build::expand(x, shape_or_varargs(L, 2, true)));
  return 1;
}

int l_squeeze(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  std::optional<int> d;
  if (!lua_isnoneornil(L, 2)) d = check_dim(L, 2, rank_of(x));
  push_tensor(L, build::squeeze(x, d));
  return 1;
}

int l_unsqueeze(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  // Positions 1..rank+1 (negative from the end: -1 appends).
  const int d = normalize_dim(check_int(L, 2), rank_of(x) + 1);
  push_tensor(L, build::unsqueeze(x, d));
  return 1;
}

int l_flatten(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const int r = rank_of(x);
  if (r == 0) {
    push_tensor(L, build::reshape(x, {1}));
    return 1;
  }
  const int first = lua_isnoneornil(L, 2) ? 0 : check_dim(L, 2, r);
  const int last = lua_isnoneornil(L, 3) ? r - 1 : check_dim(L, 3, r);
  push_tensor(L, build::flatten(x, first, last));
  return 1;
}

int l_cat(lua_State* L) {
  const std::vector<NodeRef> xs = tensor_list(L, 1);
  user_check(rank_of(xs[0]) >= 1, "cannot concatenate scalars (use tp.stack)");
  const int d = lua_isnoneornil(L, 2) ? 0 : check_dim(L, 2, rank_of(xs[0]));
  push_tensor(L, build::cat(xs, d));
  return 1;
}

int l_stack(lua_State* L) {
  const std::vector<NodeRef> xs = tensor_list(L, 1);
  const int d = lua_isnoneornil(L, 2) ? 0 : normalize_dim(check_int(L, 2), rank_of(xs[0]) + 1);
  push_tensor(L, build::stack(xs, d));
  return 1;
}

int l_narrow(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const int d = check_dim(L, 2, rank_of(x));
  const int64_t first = resolve_index(check_int(L, 3), x->shape[d], d, x->shape);
  push_tensor(L, build::narrow(x, d, first, check_int(L, 4)));
  return 1;
}

int l_select(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  user_check(rank_of(x) >= 1, "cannot select from a scalar");
  const int d = check_dim(L, 2, rank_of(x));
  push_tensor(L, build::select(x, d, resolve_index(check_int(L, 3), x->shape[d], d, x->shape)));
  return 1;
}

namespace {

// A region x[{...}]: per dim, {} whole, {a} a..end, {a,b} inclusive, {a,b,step}, or a
// number that selects one index (the dim is dropped from `kept`).
struct Region {
  std::vector<int64_t> start, step;
  Shape count, kept;
};

Region parse_region(lua_State* L, int arg, const NodeRef& x) {
  const int r = rank_of(x);
  const lua_Integer n = luaL_len(L, arg);
  user_check(n <= r, "too many indices (", n, ") for a tensor of shape ", shape_str(x->shape));
  Region g{std::vector<int64_t>(r, 0), std::vector<int64_t>(r, 1), x->shape, {}};
  for (int d = 0; d < r; ++d) {
    const int64_t size = x->shape[d];
    if (d >= n) {
      g.kept.push_back(size);
      continue;
    }
    lua_geti(L, arg, d + 1);
    const int e = lua_gettop(L);
    if (lua_type(L, e) == LUA_TNUMBER) {
      g.start[d] = resolve_index(check_int(L, e), size, d, x->shape);
      g.count[d] = 1;
    } else if (lua_type(L, e) == LUA_TTABLE) {
      const lua_Integer len = luaL_len(L, e);
      user_check(len <= 3, "range for dimension ", d + 1, " has ", len,
                 " entries (expected {}, {a}, {a,b} or {a,b,step})");
      int64_t v[3] = {1, size, 1};
      for (lua_Integer k = 1; k <= len; ++k) {
        lua_geti(L, e, k);
        v[k - 1] = check_int(L, lua_gettop(L));
        lua_pop(L, 1);
      }
      user_check(v[2] != 0, "step must not be zero in dimension ", d + 1);
      // 0-based ends before checking them: a range that runs backwards (b before a for a
      // positive step) selects nothing, as a Lua for loop runs no iteration, and its ends may
      // then sit one past either edge ({n+1, n} is numpy's x[n:], {1, 0} its x[:0]).
      const int64_t a = len >= 1 ? (v[0] < 0 ? size + v[0] : v[0] - 1) : 0;
      const int64_t b = len >= 2 ? (v[1] < 0 ? size + v[1] : v[1] - 1) : size - 1;
      if (v[2] > 0 ? a > b : a < b) {
        user_check(a >= -1 && a <= size && b >= -1 && b <= size, "range ", v[0], "..", v[1],
                   " selects nothing and lies outside dimension ", d + 1, " of size ", size, " (shape ",
                   shape_str(x->shape), ")");
        g.start[d] = 0;
        g.count[d] = 0;
        g.kept.push_back(0);
      } else {
        resolve_index(v[0], size, d, x->shape);  // the bounds errors, as for one index
        if (len >= 2) resolve_index(v[1], size, d, x->shape);
        g.start[d] = a;
        g.step[d] = v[2];
        g.count[d] = (b - a) / v[2] + 1;
        g.kept.push_back(g.count[d]);
      }
      lua_pop(L, 1);
      continue;
    } else {
      const std::string got = luaL_typename(L, e);
      lua_pop(L, 1);
      arg_error(arg, cat_str("index for dimension ", d + 1, " must be a number or a range table, got ", got));
    }
    lua_pop(L, 1);
  }
  return g;
}

}  // namespace

// x[{...}] reads a region; x[i] is x:select(1, i).
int l_index(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  if (lua_type(L, 2) == LUA_TNUMBER) {
    user_check(rank_of(x) >= 1, "cannot index a scalar");
    push_tensor(L, build::select(x, 0, resolve_index(check_int(L, 2), x->shape[0], 0, x->shape)));
    return 1;
  }
  if (index_by_tensor(L, x)) return 1;
  if (lua_type(L, 2) != LUA_TTABLE) type_error(L, 2, "index table");
  const Region g = parse_region(L, 2, x);
  push_tensor(L, build::reshape(build::slice(x, g.start, g.step, g.count), g.kept));
  return 1;
}

// tp.env.w[{...}] = y: rebinds w to a copy with the region replaced (y broadcast to it).
int l_newindex(lua_State* L) {
  TensorHandle* h = to_tensor_handle(L, 1);
  const NodeRef x = check_tensor(L, 1);
  user_check(h && !h->name.empty(), "tensors are immutable: only a region of a named tensor can be ",
             "written (tp.env.name[{...}] = y)");
  if (lua_type(L, 2) == LUA_TNUMBER) {  // w[i] = y is w[{i}] = y
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, 2);
    lua_seti(L, -2, 1);
    lua_replace(L, 2);
  }
  if (const std::optional<NodeRef> w = write_by_tensor(L, x)) {  // an index tensor or a mask
    session_of(L).env().bind(h->name, *w);
    h->node = *w;
    return 0;
  }
  if (lua_type(L, 2) != LUA_TTABLE) type_error(L, 2, "index table");
  const Region g = parse_region(L, 2, x);
  for (int64_t s : g.step) user_check(s == 1, "region writes need step 1 ranges");
  build::Operand y = check_operand(L, 3);
  if (!y.weak) {  // y is broadcast to the region as read (selected dims dropped)
    user_check(broadcastable_to(y.node->shape, g.kept), "value of shape ", shape_str(y.node->shape),
               " cannot be broadcast to the region ", shape_str(g.kept), " of ", h->name, " ",
               shape_str(x->shape));
    y.node = build::reshape(build::broadcast_to(y.node, g.kept), g.count);
  }
  NodeRef w = build::write_region(x, g.start, g.count, y);
  session_of(L).env().bind(h->name, w);
  h->node = w;
  return 0;
}

}  // namespace tapestry::lua
