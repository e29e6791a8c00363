// The tensors a save writes (save_parts.hpp); tp.save's rule, for several tensors at once.
#include "lang/save_parts.hpp"

#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "engine/session/sharded_io.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

// Written piece by piece where it lies: a stored tensor on several ranks, or on one rank one an
// out-of-core plan kept in pieces (engine/plan/bands.hpp), which may not fit whole in memory.
bool stored_here(Session& ses, const NodeRef& n) {
  const StoredLayout* l = ses.stored().layout(n->id);
  return l && (ses.mesh().ranks > 1 || l->ranks == 1);
}

}  // namespace

std::vector<NodeRef> computed_for_save(lua_State* L, const std::vector<NodeRef>& xs) {
  Session& ses = session_of(L);
  std::vector<NodeRef> out = xs;
  std::vector<size_t> pending;  // neither a value nor stored yet
  // One rank keeps pieces only under a budget (an out-of-core plan's result): look for them then.
  if (ses.mesh().ranks > 1 || ses.mesh().spill) {
    ses.telemetry().clear_cancel();
    materialize(ses);
    for (size_t i = 0; i < xs.size(); ++i) {
      // A stored tensor is written by the ranks holding it, even when rank 0 also holds a
      // gathered copy (it was printed): that copy would make rank 0 write everything.
      if (ses.stored().layout(xs[i]->id)) continue;
      if (NodeRef leaf = io::stored_leaf_of(ses, xs[i])) {
        out[i] = leaf;
      } else if (!xs[i]->value) {
        pending.push_back(i);
      }
    }
    std::vector<NodeRef> exprs;
    for (size_t i : pending) exprs.push_back(xs[i]);
    const std::vector<NodeRef> stored = exprs.empty() ? std::vector<NodeRef>{} : observe_stored(ses, exprs);
    for (size_t k = 0; k < pending.size(); ++k) out[pending[k]] = stored[k];
  }
  // What is neither a value nor a stored leaf now is observed whole (one rank, or a value one
  // rank computed).
  std::vector<NodeRef> rest;
  for (const NodeRef& n : out)
    if (!n->value && !stored_here(ses, n)) rest.push_back(n);
  if (!rest.empty()) observe(L, rest);
  return out;
}

bool is_stored(lua_State* L, const NodeRef& part) {
  Session& ses = session_of(L);
  return stored_here(ses, part);
}

}  // namespace tapestry::lua
