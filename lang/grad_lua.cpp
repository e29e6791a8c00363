// Gradients from Lua: tp.grad (reverse mode, lazy) and tp.detach (a leaf cut from its graph).
//   local g = tp.grad(loss, {tp.env.w, tp.env.b})   -- g[1] has w's shape and dtype
//   tp.env.w = tp.env.w - 0.1 * g[1]
//   tp.env.w = tp.detach(tp.env.w)                  -- observed; history dropped
#include <lauxlib.h>
#include <lua.h>

#include <unordered_set>

#include "engine/ir/grad/grad.hpp"
#include "engine/session/observe.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

int l_grad(lua_State* L) {
  const NodeRef loss = check_tensor(L, 1);
  if (lua_type(L, 2) != LUA_TTABLE || is_tensor(L, 2)) type_error(L, 2, "table of Tensors");
  const lua_Integer n = luaL_len(L, 2);
  std::vector<NodeRef> params;
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, 2, i);
    const TensorHandle* h = to_tensor_handle(L, -1);
    if (!h) {
      const char* got = luaL_typename(L, -1);
      arg_error(2, cat_str("params[", i, "] must be a Tensor, got ", got));
    }
    params.push_back(check_tensor(L, -1));
    lua_pop(L, 1);
  }
  std::vector<NodeRef> gs = grad(loss, params);
  lua_createtable(L, static_cast<int>(gs.size()), 0);
  for (size_t i = 0; i < gs.size(); ++i) {
    push_tensor(L, std::move(gs[i]));
    lua_seti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

// Observes the arguments together, then returns each value as a fresh Source node: the same
// data, no inputs, never merged with another node. Optimizers rebind parameters to these so
// the graph of step k is not kept (nor walked by tp.grad) at step k + 1.
int l_detach(lua_State* L) {
  const int n = lua_gettop(L);
  std::vector<NodeRef> xs;
  for (int i = 1; i <= n; ++i) xs.push_back(check_tensor(L, i));
  // Computed and kept where they were computed (no gather to rank 0). Every result must be
  // its own leaf, even for equal expressions (two tp.zeros{3} are one node): tp.grad tells
  // parameters apart by node, so a repeated stored leaf is gathered into a fresh source.
  observe(L, {});  // pending tp.env bindings first, as every observation point does
  // With buddy replicas made in the same request: the optimizer binds tp.env to these and drops
  // their inputs, so no lineage will bring them back (docs/reliability.md, "Detached values").
  const std::vector<NodeRef> leaves = observe_detached(session_of(L), xs);
  std::unordered_set<const Node*> pushed;
  for (const NodeRef& leaf : leaves) {
    if (!leaf->value && pushed.insert(leaf.get()).second) {
      push_tensor(L, leaf);
      continue;
    }
    if (!leaf->value) observe(L, {leaf});
    push_tensor(L, make_source(leaf->value, leaf->shape, leaf->dtype));
  }
  return n;
}

}  // namespace tapestry::lua
