// Plans and layouts in Lua: tp.plan, Plan userdata, tp.explain, tp.dot,
// tp.replicated/split/grid, x:layout(), x:constrain(layout) (the mesh: mesh_lua.cpp).
//   local p = tp.plan(y, {mesh = 1024})     print(p)     p:cost().bytes_moved
//   tp.explain(y)                           y:constrain(tp.split(1)):layout()
#include "lang/plan_lua.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <new>
#include <set>
#include <sstream>

#include <sys/ioctl.h>
#include <unistd.h>

#include "engine/ir/attrs.hpp"
#include "engine/ir/fused.hpp"
#include "engine/plan/moves.hpp"
#include "engine/plan/planner.hpp"
#include "engine/poly/signature.hpp"
#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "engine/store/stored_tensor.hpp"
#include "kernels/cpu/kernels.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/mesh_lua.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry {

namespace {

constexpr const char* kPlanMeta = "tapestry.Plan";
constexpr const char* kLayoutMeta = "tapestry.Layout";

struct PlanHandle {
  plan::PlannedGraph pg;
};

PlanHandle* check_plan(lua_State* L, int i) {
  auto* h = static_cast<PlanHandle*>(luaL_testudata(L, i, kPlanMeta));
  if (!h) type_error(L, i, "Plan");
  return h;
}

// opts.search: "global", "greedy", "anneal" (global's old name), or {method=, steps=, budget=, seed=,
// exact_limit=, reassociate=}.
plan::SearchOptions read_search(lua_State* L, int opts_idx) {
  plan::SearchOptions s;
  if (opts_idx == 0) return s;
  lua_getfield(L, opts_idx, "search");
  const int t = lua_gettop(L);
  auto method = [&](const std::string& m) {
    if (m == "greedy") s.method = plan::SearchOptions::Greedy;
    else if (m == "global" || m == "anneal") s.method = plan::SearchOptions::Global;
    else arg_error(opts_idx, cat_str("unknown search '", m, "' (expected global, greedy or anneal)"));
  };
  if (lua_type(L, t) == LUA_TSTRING) {
    method(lua_tostring(L, t));
  } else if (lua_type(L, t) == LUA_TTABLE) {
    Options o(L, t, {"method", "steps", "budget", "seed", "exact_limit", "reassociate"});
    if (auto m = o.string("method")) method(*m);
    if (auto v = o.integer("steps")) s.steps = static_cast<int>(std::max<int64_t>(1, *v));
    if (auto v = o.integer("budget")) {
      user_check(*v >= 1, "search budget must be a positive count of blocks and transfers lowered, got ", *v);
      s.work_budget = *v;
    }
    if (auto v = o.integer("seed")) s.seed = static_cast<uint64_t>(*v);
    if (auto v = o.boolean("reassociate")) s.reassociate = *v;
    if (auto v = o.integer("exact_limit")) {
      user_check(*v >= 0, "search exact_limit must be a count of ops x ranks >= 0, got ", *v);
      s.exact_limit = *v;
    }
  } else if (!lua_isnil(L, t)) {
    arg_error(opts_idx, cat_str("option 'search' must be a string or a table, got ", luaL_typename(L, t)));
  }
  lua_pop(L, 1);
  return s;
}

// Tensors from 1 to the first non-tensor; an options table may follow.
struct PlanArgs {
  std::vector<NodeRef> roots;
  int opts = 0;
};
PlanArgs plan_args(lua_State* L) {
  PlanArgs a;
  const int n = lua_gettop(L);
  int i = 1;
  for (; i <= n && is_tensor(L, i); ++i) a.roots.push_back(check_tensor(L, i));
  if (a.roots.empty()) type_error(L, 1, "Tensor");
  if (i <= n && !lua_isnil(L, i)) {     // tp.plan(x, nil): no options
    Options(L, i, {"mesh", "search"});  // validates the keys
    a.opts = i;
  }
  return a;
}

// What an observation of the roots would plan: stored values are read where they lie.
plan::PlannedGraph plan_for(lua_State* L, const PlanArgs& a) {
  Session& s = session_of(L);
  return s.plan_observed(as_observed(s, a.roots), read_mesh(L, a.opts), read_search(L, a.opts));
}

std::string op_label(const Node& n) {
  std::string s = cat_str(op_def(n.op).name, " #", n.id, " ", shape_str(n.shape), " ", dtype_name(n.dtype));
  if (op_kind(n.op) == OpKind::Fused) s += " = " + describe_fused(n);
  return s;
}

// Where an op lies along each named axis of the mesh: "nodes: i, gpus: k partial sum" (the
// index dims whose blocks change along that axis; a reduction dim leaves partials there),
// "replicated" (the same block on every rank of the axis), or "" when the mesh has no named
// axes or the op is whole on one rank or runs several blocks per rank.
std::string axes_placement(const poly::Signature& s, const plan::Candidate& c, const plan::Mesh& m) {
  if (m.axes.empty() || (!c.replicated && c.block_count(m.ranks) <= 1)) return "";
  std::vector<int> count(static_cast<size_t>(m.ranks), 0);
  std::vector<poly::Box> box(static_cast<size_t>(m.ranks));
  for (const plan::Placement& p : plan::place(s, c, m.ranks)) {
    if (++count[static_cast<size_t>(p.rank)] > 1) return "";
    box[static_cast<size_t>(p.rank)] = p.box;
  }
  std::vector<int> stride(m.axes.size(), 1);  // row-major, outermost first
  for (size_t a = m.axes.size() - 1; a > 0; --a) stride[a - 1] = stride[a] * m.axes[a].size;
  std::string out;
  for (size_t a = 0; a < m.axes.size(); ++a) {
    std::set<int> varies;
    bool seen = false;
    for (int r = 0; r < m.ranks; ++r) {
      if ((r / stride[a]) % m.axes[a].size + 1 >= m.axes[a].size) continue;
      const int q = r + stride[a];
      if (count[static_cast<size_t>(r)] != 1 || count[static_cast<size_t>(q)] != 1) continue;
      seen = true;
      for (int j = 0; j < s.rank(); ++j)
        if (box[static_cast<size_t>(r)].lo[j] != box[static_cast<size_t>(q)].lo[j]) varies.insert(j);
    }
    std::string what = !seen ? "unused" : varies.empty() ? "replicated" : "";
    bool partial = false;
    for (int j : varies) {
      what += cat_str(what.empty() ? "" : "*", s.space[j].name);
      if (s.space[j].kind == poly::IndexDim::Reduction) partial = true;
    }
    if (partial) {
      for (int j : varies)
        if (s.space[j].kind == poly::IndexDim::Reduction) {
          what += cat_str(" partial ", poly::combine_name(s.space[j].combine));
          break;
        }
    }
    out += cat_str(a ? ", " : "", m.axes[a].name, ": ", what);
  }
  return out;
}

// One line per op, whatever the mesh: its placement (per named axis of the mesh, when it has
// them), then one line per kind of move its output makes (plan::classify_moves: collectives
// and point-to-point slices) with its bytes and alpha-beta time; then the totals. The
// per-rank listing is plan:blocks().
std::string plan_text(const plan::PlannedGraph& pg) {
  std::ostringstream os;
  const plan::PlanCost& c = pg.plan.cost;
  os << "Plan on " << plan::to_string(pg.mesh) << (pg.cache_hit ? " (from the plan cache)" : "") << "\n";
  const bool listed = !pg.plan.estimated || pg.plan.lowered();
  auto mib = [](int64_t b) {  // bytes, KiB, MiB or GiB, three significant digits
    const char* units[] = {"bytes", "KiB", "MiB", "GiB"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024 && u < 3) v /= 1024, ++u;
    const double p = v >= 100 ? 1 : v >= 10 ? 10 : 100;
    return cat_str(num_str(std::round(v * p) / p), " ", units[u]);
  };
  auto us = [](double t) {
    const double v = t * 1e6;
    const double p = v >= 100 ? 1 : v >= 10 ? 10 : 100;
    return cat_str(num_str(std::round(v * p) / p), " us");
  };
  // Per tensor and kind: how many groups, their bytes, the most ranks and the longest time.
  struct Kind {
    int groups = 0;
    int64_t bytes = 0;
    size_t ranks = 0;
    double time = 0;
  };
  std::map<uint64_t, std::map<plan::MoveKind, Kind>> moves;
  if (listed) {
    const plan::ShardedGraph& g = pg.plan.graph();
    for (const plan::MoveGroup& m : plan::classify_moves(g).groups) {
      if (m.local()) continue;
      Kind& k = moves[m.tensor][m.kind];
      ++k.groups;
      k.bytes += m.bytes;
      k.ranks = std::max(k.ranks, m.ranks.size());
      k.time = std::max(k.time, plan::move_time(m, g, pg.mesh));
    }
  }
  for (const NodeRef& n : pg.topo) {
    auto ch = pg.plan.choice.find(n->id);
    os << "  " << op_label(*n) << ": ";
    if (ch == pg.plan.choice.end()) {
      os << "an input";
    } else {
      const poly::Signature sig = poly::signature_of(*n);
      os << ch->second.name(sig);
      const std::string axes = axes_placement(sig, ch->second, pg.mesh);
      if (!axes.empty()) os << " [" << axes << "]";
    }
    os << "\n";
    auto mv = moves.find(n->id);
    if (mv == moves.end()) continue;
    for (const auto& [kind, k] : mv->second) {
      os << "    " << plan::move_kind_name(kind);
      if (k.groups > 1)
        os << " x" << k.groups << ", up to " << k.ranks << " ranks each: " << mib(k.bytes) << ", the longest "
           << us(k.time) << "\n";
      else os << " over " << k.ranks << " ranks: " << mib(k.bytes) << ", " << us(k.time) << "\n";
    }
  }
  if (listed) {
    const plan::ShardedGraph& g = pg.plan.graph();
    os << g.blocks.size() << " blocks, " << g.transfers.size() << " transfers, " << g.combines.size()
       << " combines over " << g.num_ranks << " ranks (plan:blocks() lists every rank's program)\n";
  } else {
    // An estimated plan (a big graph on a big mesh) is not lowered to describe it: that alone
    // would take longer than planning. plan:blocks(), plan:dot() or running it lowers it.
    os << pg.plan.blocks << " blocks, chosen by estimate from sampled blocks; plan:blocks() lowers and "
       << "lists them\n";
  }
  // Matmul chains the planner computes in another order than written (plan/reassociate.hpp).
  for (const std::string& line : pg.reassociated) os << line << "\n";
  os << "cost: " << plan::to_string(c) << "\n";
  return os.str();
}

std::string explain_text(const plan::PlannedGraph& pg) {
  std::ostringstream os;
  os << "Planning " << pg.topo.size() << " nodes for " << plan::to_string(pg.mesh) << "; "
     << pg.plan.evaluations << " joint plans costed; best total " << pg.plan.cost.total() << " s\n";
  for (const NodeRef& n : pg.topo) {
    auto ch = pg.plan.choice.find(n->id);
    if (ch == pg.plan.choice.end()) {
      std::vector<plan::Shard> held;  // a stored tensor is read where it lies
      if (!pg.plan.estimated || pg.plan.lowered())
        for (const plan::Shard& sh : pg.plan.graph().initial)
          if (sh.tensor == n->id) held.push_back(sh);
      os << "\n"
         << op_label(*n) << ": an input, "
         << (held.empty() ? "whole on rank 0" : describe_shards(held, n->shape.size())) << "\n";
      continue;
    }
    const poly::Signature sig = poly::signature_of(*n);
    os << "\n" << op_label(*n) << "\n  signature: " << poly::to_string(sig) << "\n";
    auto tr = pg.plan.tried.find(n->id);
    if (tr != pg.plan.tried.end()) {
      std::vector<plan::Tried> tried = *tr->second;
      std::sort(tried.begin(), tried.end(),
                [](const plan::Tried& a, const plan::Tried& b) { return a.best_total < b.best_total; });
      const plan::Tried* winner = nullptr;
      for (const plan::Tried& t : tried)
        if (t.candidate == ch->second) winner = &t;
      for (const plan::Tried& t : tried) {
        const bool won = &t == winner;
        os << (won ? "  * " : "    ") << t.candidate.name(sig) << ": best plan with it " << t.best_total
           << " s";
        if (won) {
          os << "   <- chosen (compute " << t.compute << " s, communication " << t.communication() << " s)";
        } else if (winner) {  // one line per rejected alternative: what it costs and why it lost
          os << ", lost on " << plan::lost_on(t, *winner) << " (compute " << std::showpos
             << t.compute - winner->compute << " s, communication "
             << t.communication() - winner->communication() << " s";
          if (t.memory_penalty > 0) os << std::noshowpos << ", over the memory per rank";
          os << std::noshowpos << ")";
        }
        os << "\n";
      }
    }
    if (n->op == Op::Constrain) {
      const ConstrainAttrs a = attrs_of<ConstrainAttrs>(*n);
      os << "  (layout fixed by x:constrain to "
         << (a.replicated ? "a copy on every rank" : plan::grid_string(a.on(pg.mesh.ranks, n->shape)))
         << ")\n";
    }
  }
  os << "\nThe chosen candidate gives the lowest estimated makespan of the whole plan (compute "
        "overlapped with transfers, plus a penalty past per-rank memory).\n";
  return os.str();
}

int plan_tostring(lua_State* L) {
  const std::string s = plan_text(check_plan(L, 1)->pg);
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

// plan:blocks(): every rank's program, step by step (lowering an estimated plan first).
int plan_blocks(lua_State* L) {
  const std::string s = plan::to_string(check_plan(L, 1)->pg.plan.graph());
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

// plan:collectives(): every move of the plan that crosses ranks, in plan order, as
// {kind = "all-reduce", op = "matmul", node = 8, ranks = 4, bytes = b, time = s}
// (plan::classify_moves; time is its alpha-beta time alone on the plan's mesh).
int plan_collectives(lua_State* L) {
  const plan::PlannedGraph& pg = check_plan(L, 1)->pg;
  const plan::ShardedGraph& g = pg.plan.graph();
  lua_newtable(L);
  lua_Integer i = 0;
  for (const plan::MoveGroup& m : plan::classify_moves(g).groups) {
    if (m.local()) continue;
    lua_createtable(L, 0, 6);
    lua_pushstring(L, plan::move_kind_name(m.kind));
    lua_setfield(L, -2, "kind");
    const Node* n = g.find(m.tensor);
    lua_pushstring(L, n ? std::string(op_def(n->op).name).c_str() : "?");
    lua_setfield(L, -2, "op");
    lua_pushinteger(L, static_cast<lua_Integer>(m.tensor));
    lua_setfield(L, -2, "node");
    lua_pushinteger(L, static_cast<lua_Integer>(m.ranks.size()));
    lua_setfield(L, -2, "ranks");
    lua_pushinteger(L, m.bytes);
    lua_setfield(L, -2, "bytes");
    lua_pushnumber(L, plan::move_time(m, g, pg.mesh));
    lua_setfield(L, -2, "time");
    lua_seti(L, -2, ++i);
  }
  return 1;
}

int plan_gc(lua_State* L) {
  if (auto* h = static_cast<PlanHandle*>(luaL_testudata(L, 1, kPlanMeta))) h->~PlanHandle();
  return 0;
}

// plan:cost([{exact = true}]): the plan's cost, or the exact simulation of an estimated one.
int plan_cost(lua_State* L) {
  const plan::PlannedGraph& pg = check_plan(L, 1)->pg;
  bool exact = false;
  if (!lua_isnoneornil(L, 2)) exact = Options(L, 2, {"exact"}).boolean("exact").value_or(false);
  const plan::PlanCost c = exact ? pg.plan.exact_cost(pg.mesh) : pg.plan.cost;
  lua_createtable(L, 0, 6);
  lua_pushnumber(L, c.time);
  lua_setfield(L, -2, "time");
  lua_pushinteger(L, c.bytes_moved);
  lua_setfield(L, -2, "bytes_moved");
  lua_pushnumber(L, c.flops);
  lua_setfield(L, -2, "flops");
  lua_pushinteger(L, c.peak_bytes);
  lua_setfield(L, -2, "peak_bytes");
  lua_pushnumber(L, c.memory_penalty);
  lua_setfield(L, -2, "memory_penalty");
  lua_pushboolean(L, c.estimated);
  lua_setfield(L, -2, "estimated");
  return 1;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  user_check(static_cast<bool>(f), "cannot open '", path, "' for writing");
  f << text;
  user_check(static_cast<bool>(f), "cannot write '", path, "'");
}

// Graphviz: one cluster per rank with its blocks; edges for transfers.
int plan_dot(lua_State* L) {
  const plan::PlannedGraph& pg = check_plan(L, 1)->pg;
  const std::string path = check_path(L, 2);
  const plan::ShardedGraph& g = pg.plan.graph();
  std::ostringstream os;
  os << "digraph plan {\n  rankdir=LR; node [shape=box, fontname=monospace];\n";
  for (int r = 0; r < g.num_ranks; ++r) {
    os << "  subgraph cluster_" << r << " { label=\"rank " << r << "\";\n";
    for (size_t b = 0; b < g.blocks.size(); ++b)
      if (g.blocks[b].rank == r) {
        const Node* n = g.find(g.blocks[b].node);
        os << "    b" << b << " [label=\"" << op_def(n->op).name << " #" << n->id << "\\n"
           << poly::to_string(g.blocks[b].box) << "\"];\n";
      }
    os << "  }\n";
  }
  for (size_t t = 0; t < g.transfers.size(); ++t) {
    const plan::Transfer& tr = g.transfers[t];
    os << "  t" << t << " [shape=note, label=\"#" << tr.tensor << " " << poly::to_string(tr.slice)
       << "\\nrank " << tr.from << " -> " << tr.to << "\"];\n";
  }
  os << "}\n";
  write_file(path, os.str());
  return 0;
}

void push_layout(lua_State* L, const std::vector<int64_t>& grid) {
  lua_createtable(L, 0, 2);
  lua_createtable(L, static_cast<int>(grid.size()), 0);
  for (size_t d = 0; d < grid.size(); ++d) {
    lua_pushinteger(L, grid[d]);
    lua_seti(L, -2, static_cast<lua_Integer>(d + 1));
  }
  lua_setfield(L, -2, "grid");
  luaL_setmetatable(L, kLayoutMeta);
}

// A layout table: {kind="replicated"} / {kind="split", dim=d, parts=p} / {grid={...}}.
std::vector<int64_t> layout_grid(lua_State* L, int i, const Shape& shape) {
  if (!luaL_testudata(L, i, kLayoutMeta) && lua_type(L, i) != LUA_TTABLE) type_error(L, i, "layout");
  std::vector<int64_t> grid(shape.size(), 1);
  lua_getfield(L, i, "kind");
  const std::string kind = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "grid";
  lua_pop(L, 1);
  if (kind == "replicated") return grid;
  if (kind == "split") {
    lua_getfield(L, i, "dim");
    const int64_t d = lua_tointeger(L, -1);
    lua_getfield(L, i, "parts");
    // Without parts: one per rank of the mesh a plan is made for, resolved when planning.
    const int64_t p = lua_isnil(L, -1) ? kPartsPerRank : lua_tointeger(L, -1);
    lua_pop(L, 2);
    const int dd = normalize_dim(d, static_cast<int>(shape.size()));
    grid[dd] = p == kPartsPerRank ? p : std::min<int64_t>(p, shape[dd]);
    return grid;
  }
  lua_getfield(L, i, "grid");
  if (lua_type(L, -1) != LUA_TTABLE)
    arg_error(i, "layout expected (tp.replicated(), tp.split(d), tp.grid{...})");
  const lua_Integer n = luaL_len(L, -1);
  user_check(n == static_cast<lua_Integer>(shape.size()), "layout grid has ", n, " entries but the tensor ",
             shape_str(shape), " has ", shape.size(), " dims");
  for (lua_Integer d = 1; d <= n; ++d) {
    lua_geti(L, -1, d);
    grid[d - 1] = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return grid;
}

// The notation of the footer, :tensors and :layout: "split(1, 4)", "grid{2,2}", "replicated";
// a reported layout (x:layout()) says where the data lies: "whole on rank 0".
int layout_tostring(lua_State* L) {
  lua_getfield(L, 1, "where");
  if (lua_type(L, -1) == LUA_TSTRING) return 1;
  lua_getfield(L, 1, "kind");
  std::string s;
  if (lua_type(L, -1) == LUA_TSTRING && std::string(lua_tostring(L, -1)) == "replicated") {
    s = "replicated";
  } else if (lua_type(L, -1) == LUA_TSTRING && std::string(lua_tostring(L, -1)) == "split") {
    lua_getfield(L, 1, "dim");
    lua_getfield(L, 1, "parts");
    s = lua_isnil(L, -1) ? cat_str("split(", lua_tointeger(L, -2), ")")
                         : cat_str("split(", lua_tointeger(L, -2), ", ", lua_tointeger(L, -1), ")");
  } else {
    lua_getfield(L, 1, "grid");
    std::vector<int64_t> grid;
    const lua_Integer n = lua_type(L, -1) == LUA_TTABLE ? luaL_len(L, -1) : 0;
    for (lua_Integer d = 1; d <= n; ++d) {
      lua_geti(L, -1, d);
      grid.push_back(lua_tointeger(L, -1));
      lua_pop(L, 1);
    }
    s = plan::grid_string(grid);
  }
  lua_pushstring(L, s.c_str());
  return 1;
}

// Parts per dim of a set of shards: the distinct starts along each dim.
std::vector<int64_t> grid_of(const std::vector<plan::Shard>& shards, size_t rank) {
  std::vector<std::set<int64_t>> starts(rank);
  for (const plan::Shard& sh : shards)
    for (size_t d = 0; d < rank && d < sh.box.lo.size(); ++d) starts[d].insert(sh.box.lo[d]);
  std::vector<int64_t> grid;
  for (const auto& st : starts) grid.push_back(std::max<int64_t>(1, static_cast<int64_t>(st.size())));
  return grid;
}

// Where x's data lies: the one answer of x:layout(), :layout, :tensors and the footer. A stored
// tensor's shards (a copy an observation gathered to rank 0 does not move them), a value
// computed whole on rank 0, else x's result as planned on `mesh`.
// note: set, for a value still to compute whose op splits a reduction, to how its partials
// are merged: "from partial sums on 4 ranks (k/4 + all-reduce)".
plan::LayoutInfo where_it_lies(Session& s, const NodeRef& x, const plan::Mesh& mesh,
                               const plan::SearchOptions& search, std::string* note = nullptr) {
  plan::LayoutInfo li;
  const NodeRef& held = x->stored ? x->stored : x;
  if (const StoredLayout* st = s.stored().layout(held->id)) {
    li.shards = st->shards;
    li.grid = grid_of(li.shards, x->shape.size());
  } else if (x->value) {
    li.grid.assign(x->shape.size(), 1);
    li.shards.push_back(plan::Shard{x->id, poly::Box::of_shape(x->shape), 0});
  } else {
    const std::vector<NodeRef> roots = as_observed(s, {x});
    const plan::PlannedGraph pg = s.plan_observed(roots, mesh, search);
    li = plan::layout_of(pg, roots[0]->id);
    const NodeRef& made = pg.roots.empty() ? roots[0] : pg.roots[0];  // fusion may replace it
    const auto ch = pg.plan.choice.find(made->id);
    if (note && ch != pg.plan.choice.end()) {
      const poly::Signature sig = poly::signature_of(*made);
      if (plan::splits_reduction(sig, ch->second)) {
        std::string kind = "sums";
        for (const poly::IndexDim& d : sig.space)
          if (d.kind == poly::IndexDim::Reduction && d.combine != poly::CombineKind::Sum)
            kind = cat_str(poly::combine_name(d.combine), " partials");
        *note = cat_str(
            "from partial ", kind == "sums" ? "sums" : kind, " on ",
            ch->second.block_count(mesh.ranks) < mesh.ranks ? ch->second.block_count(mesh.ranks) : mesh.ranks,
            " ranks (", ch->second.name(sig), ")");
      }
    }
  }
  return li;
}

// The shard map of x (where_it_lies).
std::string layout_map_on(Session& s, const NodeRef& x, const plan::Mesh& mesh,
                          const plan::SearchOptions& search) {
  std::string note;
  const plan::LayoutInfo li = where_it_lies(s, x, mesh, search, &note);
  const bool tty = isatty(STDOUT_FILENO) != 0;
  winsize ws = {};
  const int width = tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 52;
  std::string what = describe_shards(li.shards, x->shape.size());
  if (!note.empty()) what += ", " + note;
  return render_layout(x->shape, li.shards, what, tty, std::min(width, 132));
}

}  // namespace

namespace lua {

int l_plan(lua_State* L) {
  const PlanArgs a = plan_args(L);
  plan::PlannedGraph pg = plan_for(L, a);
  void* mem = lua_newuserdatauv(L, sizeof(PlanHandle), 0);
  new (mem) PlanHandle{std::move(pg)};
  luaL_setmetatable(L, kPlanMeta);
  return 1;
}

int l_explain(lua_State* L) {
  const std::string s = explain_text(plan_for(L, plan_args(L)));
  lua_getglobal(L, "print");
  lua_pushlstring(L, s.data(), s.size() - 1);
  lua_call(L, 1, 0);
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

int l_dot(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const std::string path = check_path(L, 2);
  std::ostringstream os;
  os << "digraph expr {\n  node [shape=box, fontname=monospace];\n";
  for (const NodeRef& n : plan::observed_subgraph({x})) {
    os << "  n" << n->id << " [label=\"" << op_label(*n) << (n->value ? "\\n(data)" : "") << "\"];\n";
    if (!n->value)
      for (const NodeRef& in : n->inputs) os << "  n" << in->id << " -> n" << n->id << ";\n";
  }
  os << "}\n";
  write_file(path, os.str());
  return 0;
}

int l_layout(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  Session& s = session_of(L);
  const plan::LayoutInfo li = where_it_lies(s, x, s.mesh(), read_search(L, 0));
  push_layout(L, li.grid);
  const std::string where = describe_shards(li.shards, x->shape.size());
  lua_pushlstring(L, where.data(), where.size());
  lua_setfield(L, -2, "where");
  return 1;
}

int l_constrain(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const std::vector<int64_t> grid = layout_grid(L, 2, x->shape);  // checks the argument first
  lua_getfield(L, 2, "kind");
  const bool replicated = lua_type(L, -1) == LUA_TSTRING && std::string(lua_tostring(L, -1)) == "replicated";
  lua_pop(L, 1);
  push_tensor(L, build::constrain(x, grid, replicated));
  return 1;
}

int l_replicated(lua_State* L) {
  lua_createtable(L, 0, 1);
  lua_pushstring(L, "replicated");
  lua_setfield(L, -2, "kind");
  luaL_setmetatable(L, kLayoutMeta);
  return 1;
}

int l_split(lua_State* L) {
  const int64_t d = check_int(L, 1);
  user_check(d != 0, "dimension 0 is not valid (dimensions are 1-based)");
  const int64_t p = lua_isnoneornil(L, 2) ? 0 : check_int(L, 2);
  user_check(lua_isnoneornil(L, 2) || p >= 1, "parts must be positive, got ", p);
  lua_createtable(L, 0, 3);
  lua_pushstring(L, "split");
  lua_setfield(L, -2, "kind");
  lua_pushinteger(L, d);
  lua_setfield(L, -2, "dim");
  if (p >= 1) {
    lua_pushinteger(L, p);
    lua_setfield(L, -2, "parts");
  }
  luaL_setmetatable(L, kLayoutMeta);
  return 1;
}

int l_grid(lua_State* L) {
  const Shape g = check_shape_arg(L, 1);
  push_layout(L, std::vector<int64_t>(g.begin(), g.end()));
  return 1;
}

// tp.layout_map(x [,opts]): opts.mesh/opts.search as tp.plan, so a laptop can draw the map
// of a 4-rank plan.
int l_layout_map(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  int opts = 0;
  if (!lua_isnoneornil(L, 2)) {
    Options(L, 2, {"mesh", "search"});  // validates the keys
    opts = 2;
  }
  Session& ses = session_of(L);
  const std::string s = opts == 0 ? describe_layout_map(ses, x)
                                  : layout_map_on(ses, x, read_mesh(L, opts), read_search(L, opts));
  lua_pushlstring(L, s.data(), s.size());
  return 1;
}

}  // namespace lua

std::string describe_layout_map(Session& s, const NodeRef& x) { return layout_map_on(s, x, s.mesh(), {}); }

void register_plan_types(lua_State* L) {
  luaL_newmetatable(L, kPlanMeta);
  lua_createtable(L, 0, 4);
  push_guarded(L, plan_cost, "Plan:cost");
  lua_setfield(L, -2, "cost");
  push_guarded(L, plan_dot, "Plan:dot");
  lua_setfield(L, -2, "dot");
  push_guarded(L, plan_blocks, "Plan:blocks");
  lua_setfield(L, -2, "blocks");
  push_guarded(L, plan_collectives, "Plan:collectives");
  lua_setfield(L, -2, "collectives");
  lua_setfield(L, -2, "__index");
  push_guarded(L, plan_tostring, "Plan.__tostring");
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, plan_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, kLayoutMeta);
  push_guarded(L, layout_tostring, "Layout.__tostring");
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}

}  // namespace tapestry
