// Printing tensors: tostring(x) and tp.set_printoptions. A tensor over the print threshold is
// shown summarized (numpy's rules), and on several ranks only what is shown is gathered: the
// tensor is computed where the plan puts it (kept sharded, as tp.eval keeps it), then an
// observation of just its corners (a cat of narrows per summarized dim) brings those to rank 0.
// Printing a named tensor leaves no gathered copy behind.
#include <lauxlib.h>
#include <lua.h>

#include "engine/ir/build/builders.hpp"
#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

// Along each summarized dim, the first and the last edge items, joined. Each corner block is one
// slice of x (slices of slices are not folded), so the plan moves the corners and nothing else.
NodeRef corners(const NodeRef& x, const FormatOptions& opts, Shape& start, Shape& count, size_t d = 0) {
  while (d < x->shape.size() && !summarized_dim(x->shape[d], opts)) ++d;
  if (d == x->shape.size()) return build::slice(x, start, Shape(x->shape.size(), 1), count);
  const int64_t edge = std::max(opts.edge_items, 1);
  count[d] = edge;
  start[d] = 0;
  NodeRef first = corners(x, opts, start, count, d + 1);
  start[d] = x->shape[d] - edge;
  NodeRef last = corners(x, opts, start, count, d + 1);
  return build::cat({first, last}, static_cast<int>(d));
}

NodeRef corners(const NodeRef& x, const FormatOptions& opts) {
  Shape start(x->shape.size(), 0), count = x->shape;
  return corners(x, opts, start, count);
}

}  // namespace

int l_tostring(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  Session& s = session_of(L);
  FormatOptions opts = state_context(L).print;
  auto with_note = [&](const NodeRef& n) {
    opts.note = s.layouts().find(n->id);  // sharded results say how they were split
    if (!opts.note.empty()) opts.note = "computed as " + opts.note;
  };
  if (x->value || s.mesh().ranks == 1) {
    observe(L, {x});
    with_note(x);
    const std::string text = format_tensor(x->value->view(), opts);
    lua_pushlstring(L, text.data(), text.size());
    return 1;
  }
  s.telemetry().clear_cancel();
  materialize(s);
  observe_kept(s, {x});  // computed where the plan puts it; nothing gathered yet
  const NodeRef held = x->stored ? x->stored : x;
  with_note(held);
  if (x->value) {  // one rank computed it, whole on rank 0
    const std::string text = format_tensor(x->value->view(), opts);
    lua_pushlstring(L, text.data(), text.size());
    return 1;
  }
  const NodeRef shown = summarizes(x->shape, opts) ? corners(held, opts) : held;
  observe_values(s, {shown});
  const std::shared_ptr<const Value> v = shown->value;
  // Gathering a stored tensor caches its value on rank 0: printing must not keep that copy.
  if (shown == held && s.stored().layout(held->id)) set_value(*held, nullptr);
  const std::string text = format_tensor(v->view(), opts, x->shape);
  lua_pushlstring(L, text.data(), text.size());
  return 1;
}

int l_set_printoptions(lua_State* L) {
  Options o(L, 1, {"threshold", "edgeitems", "precision", "linewidth"});
  FormatOptions& p = state_context(L).print;
  FormatOptions next = p;
  if (auto t = o.integer("threshold")) {
    user_check(*t >= 0, "threshold must be >= 0, got ", *t);
    next.threshold = *t;
  }
  if (auto e = o.integer("edgeitems")) {
    user_check(*e >= 1 && *e <= 1000000, "edgeitems must be in 1..1000000, got ", *e);
    next.edge_items = static_cast<int>(*e);
  }
  if (auto pr = o.integer("precision")) {
    user_check(*pr >= 0 && *pr <= 60, "precision must be in 0..60, got ", *pr);
    next.precision = static_cast<int>(*pr);
  }
  if (auto w = o.integer("linewidth")) {
    user_check(*w >= 10 && *w <= 100000, "linewidth must be in 10..100000, got ", *w);
    next.line_width = static_cast<int>(*w);
  }
  p = next;
  return 0;
}

int l_get_printoptions(lua_State* L) {
  const FormatOptions& p = state_context(L).print;
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, p.threshold);
  lua_setfield(L, -2, "threshold");
  lua_pushinteger(L, p.edge_items);
  lua_setfield(L, -2, "edgeitems");
  lua_pushinteger(L, p.precision);
  lua_setfield(L, -2, "precision");
  lua_pushinteger(L, p.line_width);
  lua_setfield(L, -2, "linewidth");
  return 1;
}

}  // namespace tapestry::lua
