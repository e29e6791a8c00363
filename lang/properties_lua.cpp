// Declared properties: tp.symmetric / tp.antisymmetric / tp.hermitian groups, x:declare,
// x:dense, x:nbytes, x:properties, and the creators' `symmetry` option (docs/properties.md).
#include <lauxlib.h>
#include <lua.h>

#include <algorithm>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/packed.hpp"
#include "engine/ir/dtype.hpp"
#include "engine/ir/properties.hpp"
#include "engine/ir/shape.hpp"
#include "engine/ir/value.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/properties_lua.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {
namespace {

constexpr const char* kGroupMeta = "tapestry.SymmetryGroup";

int group_tostring(lua_State* L) {
  lua_getfield(L, 1, "kind");
  std::string s = luaL_optstring(L, -1, "?");
  lua_pop(L, 1);
  s += "{";
  lua_getfield(L, 1, "dims");
  const lua_Integer n = lua_istable(L, -1) ? luaL_len(L, -1) : 0;
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, -1, i);
    s += (i > 1 ? "," : "") + std::to_string(lua_tointeger(L, -1));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_pushstring(L, (s + "}").c_str());
  return 1;
}

// {kind = "symmetric", dims = {1, 2}} with a __tostring: "symmetric{1,2}".
void push_group(lua_State* L, const SymmetryGroup& g) {
  lua_createtable(L, 0, 2);
  lua_pushstring(L, g.herm ? "hermitian" : g.anti ? "antisymmetric" : "symmetric");
  lua_setfield(L, -2, "kind");
  lua_createtable(L, static_cast<int>(g.dims.size()), 0);
  for (size_t i = 0; i < g.dims.size(); ++i) {
    lua_pushinteger(L, g.dims[i] + 1);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, "dims");
  if (luaL_newmetatable(L, kGroupMeta)) {
    lua_pushcfunction(L, group_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_setmetatable(L, -2);
}

int make_group(lua_State* L, bool anti, bool herm = false) {
  luaL_checktype(L, 1, LUA_TTABLE);
  SymmetryGroup g{anti, {}, herm};
  const lua_Integer n = luaL_len(L, 1);
  user_check(n >= 2, "a symmetry group needs at least 2 dims, got ", n);
  user_check(!herm || n == 2, "a Hermitian group is a pair of dims (x[i,j] = conj(x[j,i])), got ", n,
             " dims");
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, 1, i);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
      user_check(false, "dims must be positive integers (1-based), got ", luaL_tolstring(L, -1, nullptr),
                 " at position ", i);
    g.dims.push_back(static_cast<int>(lua_tointeger(L, -1)) - 1);
    lua_pop(L, 1);
  }
  push_group(L, g);
  return 1;
}

bool is_group(lua_State* L, int idx) {
  if (!lua_istable(L, idx) || !lua_getmetatable(L, idx)) return false;
  luaL_getmetatable(L, kGroupMeta);
  const bool same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same;
}

SymmetryGroup read_group(lua_State* L, int idx) {
  SymmetryGroup g;
  lua_getfield(L, idx, "kind");
  const std::string kind = lua_tostring(L, -1);
  g.anti = kind == "antisymmetric";
  g.herm = kind == "hermitian";
  lua_pop(L, 1);
  lua_getfield(L, idx, "dims");
  const lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, -1, i);
    g.dims.push_back(static_cast<int>(lua_tointeger(L, -1)) - 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return g;
}

}  // namespace

std::vector<SymmetryGroup> read_symmetry(lua_State* L, int opts) {
  std::vector<SymmetryGroup> out;
  if (opts == 0 || !lua_istable(L, opts)) return out;
  lua_getfield(L, opts, "symmetry");
  const int v = lua_gettop(L);
  if (lua_isnil(L, v)) {
    lua_pop(L, 1);
    return out;
  }
  if (is_group(L, v)) {
    out.push_back(read_group(L, v));
  } else {
    user_check(
        lua_istable(L, v) && luaL_len(L, v) >= 1,
        "option 'symmetry' must be tp.symmetric{...}, tp.antisymmetric{...}, tp.hermitian{...} or a list of "
        "them, got ",
        luaL_typename(L, v));
    for (lua_Integer i = 1; i <= luaL_len(L, v); ++i) {
      lua_geti(L, v, i);
      user_check(is_group(L, -1), "option 'symmetry'[", i,
                 "] must be tp.symmetric{...}, tp.antisymmetric{...} or tp.hermitian{...}, got ",
                 luaL_typename(L, -1));
      out.push_back(read_group(L, lua_gettop(L)));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return out;
}

static NodeRef declared_creator(const NodeRef& x, std::vector<SymmetryGroup> groups, Creator kind,
                                double value);

// The creator's tensor with the groups declared, as its packed form's unpack (docs/properties.md):
// ops on it run on the stored tiles, and tp.env keeps just those.
NodeRef with_symmetry(const NodeRef& x, std::vector<SymmetryGroup> groups, Creator kind, double value) {
  if (groups.empty()) return x;
  return build::read_form(build::stored_form(declared_creator(x, std::move(groups), kind, value)), {});
}

static NodeRef declared_creator(const NodeRef& x, std::vector<SymmetryGroup> groups, Creator kind,
                                double value) {
  build::check_groups(x->shape, groups, x->dtype);
  const auto declare = [](const NodeRef& y, std::vector<SymmetryGroup> g, bool trust) {
    return build::declare(y, PropertiesAttrs{std::move(g), {}, {}, {}}, trust);
  };
  switch (kind) {
    case Creator::Data: return declare(x, std::move(groups), false);  // checked when evaluated
    case Creator::Constant:
      for (const SymmetryGroup& g : groups)
        user_check(!g.anti || value == 0, "a constant ", value, " is not ", group_str(g),
                   " (only 0 is antisymmetric)");
      return declare(x, std::move(groups), true);
    case Creator::Eye:
      for (const SymmetryGroup& g : groups)
        user_check(!g.anti, "the identity is not ", group_str(g), " (it is symmetric{1,2})");
      return declare(x, std::move(groups), true);  // real: Hermitian when complex
    case Creator::Random: {
      NodeRef y = x;
      for (const SymmetryGroup& g : groups) y = build::mirror(y, g);
      return declare(y, std::move(groups), true);
    }
  }
  return x;
}

int l_symmetric(lua_State* L) { return make_group(L, false); }
int l_antisymmetric(lua_State* L) { return make_group(L, true); }
int l_hermitian(lua_State* L) { return make_group(L, false, true); }

// opts.tiles and opts.nonzero (a bool tensor over the tile grid, observed now: it is small).
void read_tiles(lua_State* L, const Options& o, const NodeRef& x, PropertiesAttrs& p) {
  if (!o.has("tiles") && !o.has("nonzero")) return;
  user_check(o.has("tiles") && o.has("nonzero"),
             "block sparsity needs both tiles = {...} and nonzero = mask");
  lua_getfield(L, 2, "tiles");
  p.tiles = check_shape_arg(L, lua_gettop(L));
  lua_pop(L, 1);
  user_check(p.tiles.size() == x->shape.size(), "tiles ", shape_str(p.tiles),
             " must give one extent per dim of ", shape_str(x->shape));
  const Shape grid = tile_grid(x->shape, p.tiles);
  lua_getfield(L, 2, "nonzero");
  const int m = lua_gettop(L);
  user_check(is_tensor(L, m), "nonzero must be a bool tensor over the tile grid ", shape_str(grid),
             ", got a ", luaL_typename(L, m));
  const NodeRef mask = check_tensor(L, m);
  user_check(mask->dtype == DType::Bool && mask->shape == grid,
             "nonzero must be a bool tensor of the tile grid's shape ", shape_str(grid), " (shape ",
             shape_str(x->shape), " in tiles ", shape_str(p.tiles), "), got ", dtype_name(mask->dtype), " ",
             shape_str(mask->shape));
  observe(L, {mask});
  const bool* b = mask->value->data<bool>();
  p.nonzero.assign(b, b + numel(grid));
  lua_pop(L, 1);
}

int l_declare(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const Options o(L, 2, {"symmetry", "trust", "tiles", "nonzero"});
  const bool trust = o.boolean("trust").value_or(false);
  PropertiesAttrs p{read_symmetry(L, lua_istable(L, 2) ? 2 : 0), {}, {}, {}};
  read_tiles(L, o, x, p);
  TensorHandle* h = to_tensor_handle(L, 1);
  push_tensor(L, build::declare(x, std::move(p), trust), h ? h->name : std::string{});
  return 1;
}

int l_dense(lua_State* L) {
  push_tensor(L, build::dense(check_tensor(L, 1)));
  return 1;
}

int l_nbytes(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  lua_pushinteger(L, static_cast<lua_Integer>(build::held_bytes(x)));
  return 1;
}

int l_properties(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const Properties p = properties_of(x);
  lua_createtable(L, 0, 4);
  lua_createtable(L, static_cast<int>(p.groups.size()), 0);
  for (size_t i = 0; i < p.groups.size(); ++i) {
    push_group(L, p.groups[i]);
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, "symmetry");
  lua_pushboolean(L, p.zero);
  lua_setfield(L, -2, "zero");
  lua_pushboolean(L, p.diagonal);
  lua_setfield(L, -2, "diagonal");
  lua_pushinteger(L, static_cast<lua_Integer>(stored_elements(x)));
  lua_setfield(L, -2, "stored");
  if (!p.tiles.empty()) {
    lua_createtable(L, static_cast<int>(p.tiles.size()), 0);
    for (size_t d = 0; d < p.tiles.size(); ++d) {
      lua_pushinteger(L, p.tiles[d]);
      lua_rawseti(L, -2, static_cast<lua_Integer>(d + 1));
    }
    lua_setfield(L, -2, "tiles");
    const Shape grid = tile_grid(x->shape, p.tiles);
    auto v = Value::alloc(DType::Bool, grid);
    std::copy(p.nonzero.begin(), p.nonzero.end(), v->data<bool>());
    push_tensor(L, make_source(std::move(v), grid, DType::Bool));
    lua_setfield(L, -2, "nonzero");
  }
  return 1;
}

}  // namespace tapestry::lua
