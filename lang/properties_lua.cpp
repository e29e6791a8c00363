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

namespace {

// The tiles of a grid (row-major) that the main diagonal of a rows x cols matrix crosses.
std::vector<bool> diagonal_tiles(const Shape& shape, const std::vector<int64_t>& tiles) {
  const Shape grid = tile_grid(shape, tiles);
  const int64_t len = std::min(shape[0], shape[1]);
  std::vector<bool> out(static_cast<size_t>(numel(grid)), false);
  for (int64_t i = 0; i < grid[0]; ++i)
    for (int64_t j = 0; j < grid[1]; ++j) {
      const int64_t lo = std::max(i * tiles[0], j * tiles[1]);
      const int64_t hi = std::min({(i + 1) * tiles[0], (j + 1) * tiles[1], len});
      out[static_cast<size_t>(i * grid[1] + j)] = lo < hi;
    }
  return out;
}

// Tile `flat` of the grid, 1-based: "{1,2}".
std::string tile_str(int64_t flat, const Shape& grid) {
  std::vector<int64_t> idx(grid.size());
  for (int d = static_cast<int>(grid.size()) - 1; d >= 0; --d) {
    idx[d] = flat % grid[d] + 1;
    flat /= grid[d];
  }
  return shape_str(idx);
}

// The mask is unchanged by swapping the tile indices of each pair group (so mirrored random
// values stay inside the nonzero tiles).
void check_mask_symmetric(const PropertiesAttrs& p, const Shape& shape) {
  const Shape grid = tile_grid(shape, p.tiles);
  for (const SymmetryGroup& g : p.groups) {
    const int a = g.dims[0], b = g.dims[1];
    user_check(p.tiles[a] == p.tiles[b], group_str(g), " with tiles ", shape_str(p.tiles),
               ": the group's dims need equal tile extents");
    std::vector<int64_t> idx(grid.size(), 0);
    for (int64_t t = 0; t < numel(grid); ++t) {
      std::vector<int64_t> sw = idx;
      std::swap(sw[a], sw[b]);
      int64_t u = 0;
      for (size_t d = 0; d < grid.size(); ++d) u = u * grid[d] + sw[d];
      user_check(p.nonzero[static_cast<size_t>(t)] == p.nonzero[static_cast<size_t>(u)], "nonzero is not ",
                 group_str(g), ": tile ", tile_str(t, grid), " and tile ", tile_str(u, grid), " differ");
      for (int d = static_cast<int>(grid.size()) - 1; d >= 0 && ++idx[d] == grid[d]; --d) idx[d] = 0;
    }
  }
}

NodeRef declared_creator(const NodeRef& x, PropertiesAttrs p, Creator kind, double value) {
  build::check_groups(x->shape, p.groups, x->dtype);
  if (!p.tiles.empty()) build::check_tiles(x->shape, p.tiles, p.nonzero);
  const bool all_tiles = std::find(p.nonzero.begin(), p.nonzero.end(), false) == p.nonzero.end();
  const bool no_tiles = std::find(p.nonzero.begin(), p.nonzero.end(), true) == p.nonzero.end();
  const Shape grid = p.tiles.empty() ? Shape{} : tile_grid(x->shape, p.tiles);
  switch (kind) {
    case Creator::Data: return build::declare(x, std::move(p), false);  // checked when evaluated
    case Creator::Constant:
      for (const SymmetryGroup& g : p.groups)
        user_check(!g.anti || value == 0, "a constant ", value, " is not ", group_str(g),
                   " (only 0 is antisymmetric)");
      if (!p.tiles.empty() && value != 0 && !all_tiles) {
        const auto t = std::find(p.nonzero.begin(), p.nonzero.end(), false) - p.nonzero.begin();
        user_error("a constant ", value, " is not zero in tile ", tile_str(t, grid),
                   ", which nonzero declares zero (only 0 has zero tiles)");
      }
      return build::declare(x, std::move(p), true);
    case Creator::Eye: {
      for (const SymmetryGroup& g : p.groups)
        user_check(!g.anti, "the identity is not ", group_str(g), " (it is symmetric{1,2})");
      if (!p.tiles.empty()) {
        const std::vector<bool> diag = diagonal_tiles(x->shape, p.tiles);
        for (size_t t = 0; t < diag.size(); ++t)
          user_check(!diag[t] || p.nonzero[t], "the identity's diagonal crosses tile ",
                     tile_str(static_cast<int64_t>(t), grid), ", which nonzero declares zero");
      }
      return build::declare(x, std::move(p), true);  // real: Hermitian when complex
    }
    case Creator::Random: {
      NodeRef y = x;
      for (const SymmetryGroup& g : p.groups) y = build::mirror(y, g);
      if (!p.tiles.empty()) {
        check_mask_symmetric(p, x->shape);
        // Kept as the nonzero tiles of y (stored_form), which never reads the others; with no
        // nonzero tile (nothing packs) or every tile nonzero (nothing to drop) it is read as is.
        if (no_tiles) y = build::full(x->shape, 0, x->dtype);
      }
      return build::declare(y, std::move(p), true);
    }
  }
  return x;
}

// opts.tiles and opts.nonzero (a bool tensor over the tile grid, observed now: it is small).
// derived: nonzero may be left out (tp.zeros: no tile; tp.eye: the diagonal's tiles).
void read_tiles(lua_State* L, int opts, const NodeRef& x, PropertiesAttrs& p, bool derived) {
  if (opts == 0 || !lua_istable(L, opts)) return;
  lua_getfield(L, opts, "tiles");
  const bool tiles = !lua_isnil(L, -1);
  lua_getfield(L, opts, "nonzero");
  const bool nonzero = !lua_isnil(L, -1);
  lua_pop(L, 2);
  if (!tiles && !nonzero) return;
  user_check(tiles && (nonzero || derived), "block sparsity needs both tiles = {...} and nonzero = mask");
  lua_getfield(L, opts, "tiles");
  p.tiles = check_shape_arg(L, lua_gettop(L));
  lua_pop(L, 1);
  user_check(p.tiles.size() == x->shape.size(), "tiles ", shape_str(p.tiles),
             " must give one extent per dim of ", shape_str(x->shape));
  for (int64_t t : p.tiles) user_check(t >= 1, "tiles ", shape_str(p.tiles), ": extents must be positive");
  const Shape grid = tile_grid(x->shape, p.tiles);
  if (!nonzero) {
    p.nonzero = x->op == Op::Eye ? diagonal_tiles(x->shape, p.tiles)
                                 : std::vector<bool>(static_cast<size_t>(numel(grid)), false);
    return;
  }
  lua_getfield(L, opts, "nonzero");
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

}  // namespace

NodeRef with_properties(lua_State* L, int opts, const NodeRef& x, std::vector<SymmetryGroup> groups,
                        Creator kind, double value) {
  PropertiesAttrs p{std::move(groups), {}, {}, {}};
  read_tiles(L, opts, x, p, kind == Creator::Eye || (kind == Creator::Constant && value == 0));
  if (p.empty()) return x;
  return build::read_form(build::stored_form(declared_creator(x, std::move(p), kind, value)), {});
}

int l_symmetric(lua_State* L) { return make_group(L, false); }
int l_antisymmetric(lua_State* L) { return make_group(L, true); }
int l_hermitian(lua_State* L) { return make_group(L, false, true); }

int l_declare(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const Options o(L, 2, {"symmetry", "trust", "tiles", "nonzero"});
  const bool trust = o.boolean("trust").value_or(false);
  PropertiesAttrs p{read_symmetry(L, lua_istable(L, 2) ? 2 : 0), {}, {}, {}};
  read_tiles(L, lua_istable(L, 2) ? 2 : 0, x, p, false);
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
