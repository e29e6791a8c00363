// The mesh in Lua: tp.mesh() (the running mesh and its rates), tp.mesh{...} (a modelled mesh of
// named axes), and the {mesh = ...} option of tp.plan, tp.explain and tp.layout_map.
//   plan::Mesh m = read_mesh(L, opts);   // opts.mesh, or the session's mesh (opts == 0: none)
#pragma once

#include "engine/plan/mesh.hpp"

struct lua_State;

namespace tapestry {

// opts_idx: the stack index of an options table, or 0.
plan::Mesh read_mesh(lua_State* L, int opts_idx);

}  // namespace tapestry
