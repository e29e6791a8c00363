// tp.linalg: the LAPACK ops (require "tapestry.linalg" re-exports them beside its Lua ones).
//   local x = tp.linalg.solve(a, b)
//   local u, s, vh = tp.linalg.svd(a, {full_matrices = false})
#include <lauxlib.h>
#include <lua.h>

#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

int push_all(lua_State* L, const std::vector<NodeRef>& parts) {
  for (const NodeRef& p : parts) push_tensor(L, p);
  return static_cast<int>(parts.size());
}

}  // namespace

int l_linalg_solve(lua_State* L) {
  const NodeRef a = check_tensor_like(L, 1);
  push_tensor(L, build::solve(a, check_tensor_like(L, 2)));
  return 1;
}

int l_linalg_cholesky(lua_State* L) {
  push_tensor(L, build::cholesky(check_tensor_like(L, 1)));
  return 1;
}

int l_linalg_inv(lua_State* L) {
  push_tensor(L, build::inv(check_tensor_like(L, 1)));
  return 1;
}

int l_linalg_det(lua_State* L) {
  push_tensor(L, build::det(check_tensor_like(L, 1)));
  return 1;
}

int l_linalg_slogdet(lua_State* L) { return push_all(L, build::slogdet(check_tensor_like(L, 1))); }

int l_linalg_qr(lua_State* L) {
  const NodeRef a = check_tensor_like(L, 1);
  const std::string mode = lua_isnoneornil(L, 2) ? "reduced" : check_string(L, 2, "mode");
  if (mode != "reduced" && mode != "complete")
    arg_error(2, cat_str("mode must be 'reduced' or 'complete', got '", mode, "'"));
  return push_all(L, build::qr(a, mode == "complete"));
}

int l_linalg_svd(lua_State* L) {
  const NodeRef a = check_tensor_like(L, 1);
  Options o(L, 2, {"full_matrices", "compute_uv"});
  const bool full = o.boolean("full_matrices").value_or(true), uv = o.boolean("compute_uv").value_or(true);
  return push_all(L, build::svd(a, !uv ? 0 : (full ? 2 : 1)));
}

int l_linalg_eigh(lua_State* L) { return push_all(L, build::eigh(check_tensor_like(L, 1), true)); }

int l_linalg_eigvalsh(lua_State* L) { return push_all(L, build::eigh(check_tensor_like(L, 1), false)); }

}  // namespace tapestry::lua
