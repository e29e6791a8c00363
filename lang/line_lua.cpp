// Sorting and scans: tp.sort, argsort, topk, unique, searchsorted, cumsum, cumprod, cummax,
// cummin, logcumsumexp (methods too).
//   local v, i = x:sort(2, {descending = true})   -- i: 1-based positions in x, stable
//   local c = x:cumsum(1)
#include <lauxlib.h>
#include <lua.h>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/sample_sort.hpp"
#include "engine/ir/build/unique.hpp"
#include "engine/ir/value.hpp"
#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

int push_all(lua_State* L, const std::vector<NodeRef>& parts) {
  for (const NodeRef& p : parts) push_tensor(L, p);
  return static_cast<int>(parts.size());
}

// The dim at `arg` (1-based, negative from the end). Left out: the last dim where `last` (sort
// and topk, as numpy and torch), else only a 1-D x has an obvious one (scans: torch asks for it).
int line_dim(lua_State* L, int arg, const NodeRef& x, bool last) {
  const int rank = static_cast<int>(x->shape.size());
  user_check(rank >= 1, "x must have at least 1 dimension, got a scalar {}");
  if (!lua_isnoneornil(L, arg)) {
    const int64_t d = check_int(L, arg);
    if (d == 0 || d > rank || d < -rank)
      arg_error(arg, cat_str("dim ", d, " out of range for x of shape ", shape_str(x->shape), " (valid: 1..",
                             rank, " or -", rank, "..-1)"));
    return check_dim(L, arg, rank);
  }
  if (!last && rank > 1)
    arg_error(arg, cat_str("dim is required for a ", rank, "-D tensor ", shape_str(x->shape)));
  return rank - 1;
}

// f(x [,dim] [,opts]): where the options table sits (dim may be left out before it).
int options_at(lua_State* L, int dim_arg) {
  return is_options_table(L, dim_arg) && lua_isnoneornil(L, dim_arg + 1) ? dim_arg : dim_arg + 1;
}

struct SortArgs {
  NodeRef x;
  int dim;
  bool descending;
};

SortArgs sort_args(lua_State* L) {
  SortArgs s;
  s.x = check_tensor_like(L, 1);
  const int oi = options_at(L, 2);
  s.dim = line_dim(L, oi == 2 ? 0 : 2, s.x, true);
  Options o(L, oi, {"descending", "stable"});
  s.descending = o.boolean("descending").value_or(false);
  user_check(o.boolean("stable").value_or(true), "opts.stable: every sort is stable; false is not offered");
  return s;
}

// {values, indices} of the sort: on several ranks long lines (TAPESTRY_SAMPLE_SORT_MIN, 2^20
// by default: a shorter one is gathered and sorted on one rank faster than the extra
// observations and plans cost), fewer than the ranks, are a sample sort
// (engine/ir/build/sample_sort.hpp), ascending or descending, whose bucket sizes are observed in
// between, as a mask's count is (index_lua.cpp): the local sorts are computed and kept where
// they lie, then the counts of every line at once, then the buckets are placed from the kept
// sorts. Elsewhere a lazy sort of whole lines.
std::vector<NodeRef> sorted(lua_State* L, const SortArgs& a) {
  Session& s = session_of(L);
  const int ranks = s.mesh().ranks;
  if (!build::sample_sorts(a.x, a.dim, ranks, s.config().sample_sort_min))
    return build::sort(a.x, a.dim, a.descending);
  const build::SampleSort ss = build::sample_sort_counts(a.x, a.dim, ranks, a.descending);
  s.telemetry().clear_cancel();
  materialize(s);
  observe_kept(s, {ss.values, ss.indices});
  observe(L, {ss.bounds});
  const int64_t* b = ss.bounds->value->data<int64_t>();
  return build::sample_sort_place(ss, std::vector<int64_t>(b, b + numel(ss.bounds->shape)));
}

}  // namespace

int l_sort(lua_State* L) { return push_all(L, sorted(L, sort_args(L))); }

int l_argsort(lua_State* L) {
  push_tensor(L, sorted(L, sort_args(L))[1]);
  return 1;
}

int l_topk(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const int64_t k = check_int(L, 2);
  const int oi = options_at(L, 3);
  const int dim = line_dim(L, oi == 3 ? 0 : 3, x, true);
  Options o(L, oi, {"largest"});
  const bool largest = o.boolean("largest").value_or(true);
  // Where a sort would be a sample sort, each rank's chunks give their k best and one line of
  // P·k candidates is gathered (no observation: the sizes are static); else whole lines.
  Session& s = session_of(L);
  const int ranks = s.mesh().ranks;
  if (k >= 1 && k <= x->shape[dim] && build::sample_sorts(x, dim, ranks, s.config().sample_sort_min))
    return push_all(L, build::topk_chunked(x, k, dim, largest, ranks));
  return push_all(L, build::topk(x, k, dim, largest));
}

template <Op op> int l_scan(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const int dim = line_dim(L, 2, x, false);
  if (op == Op::Cummax || op == Op::Cummin) return push_all(L, build::scan_extreme(op, x, dim));
  push_tensor(L, build::scan(op, x, dim));
  return 1;
}
template int l_scan<Op::Cumsum>(lua_State*);
template int l_scan<Op::Cumprod>(lua_State*);
template int l_scan<Op::Cummax>(lua_State*);
template int l_scan<Op::Cummin>(lua_State*);
template int l_scan<Op::Logcumsumexp>(lua_State*);

int l_searchsorted(lua_State* L) {
  const NodeRef seq = check_tensor_like(L, 1);
  const NodeRef v = check_tensor_like(L, 2);
  Options o(L, 3, {"right", "side"});
  bool right = o.boolean("right").value_or(false);
  if (const std::optional<std::string> side = o.string("side")) {
    user_check(*side == "left" || *side == "right", "opts.side must be 'left' or 'right', got '", *side, "'");
    right = *side == "right";
  }
  push_tensor(L, build::searchsorted(seq, v, right));
  return 1;
}

// Its size depends on the data, so tp.unique computes x when called, in the phases of
// engine/ir/build/unique.hpp: each rank's chunk sorted and deduplicated where it lies (one
// chunk on one rank, or where a sort would be gathered), the distinct counts observed, the
// chunks' distinct values merged in buckets across ranks and deduplicated again, the buckets'
// counts observed (not where no bucket merges two chunks). The results are lazy tensors that
// stay where the plan computed them.
int l_unique(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  Options o(L, 2, {"return_counts"});
  const bool counts = o.boolean("return_counts").value_or(false);
  const NodeRef flat0 = x->shape.size() == 1 ? x : build::reshape(x, {numel(x->shape)});
  const NodeRef flat = build::cast(flat0, compute_dtype(flat0->dtype));  // f16, bf16: exact in f32
  std::vector<NodeRef> vc;
  if (flat->shape[0] == 0) {
    vc = {flat, build::full_int({0}, 0, DType::I64)};
  } else {
    Session& s = session_of(L);
    const int ranks = s.mesh().ranks;
    const int64_t parts = build::sample_sorts(flat, 0, ranks, s.config().sample_sort_min) ? ranks : 1;
    const build::UniqueChunks c = build::unique_chunks(flat, parts);
    s.telemetry().clear_cancel();
    materialize(s);
    // Kept with the tables they count (one run), then read: only the small counts move.
    observe_kept(s, {c.values, c.counts, c.stats});
    observe(L, {c.stats});
    const int64_t* st = c.stats->value->data<int64_t>();
    const build::UniqueBuckets b =
        build::unique_buckets(c, std::vector<int64_t>(st, st + numel(c.stats->shape)));
    std::vector<int64_t> sizes;
    if (b.sizes) {
      observe_kept(s, {b.values, b.counts, b.sizes});
      observe(L, {b.sizes});
      const int64_t* z = b.sizes->value->data<int64_t>();
      sizes.assign(z, z + numel(b.sizes->shape));
    }
    vc = build::unique_join(b, sizes);
  }
  push_tensor(L, build::cast(vc[0], x->dtype));
  if (!counts) return 1;
  push_tensor(L, vc[1]);
  return 2;
}

}  // namespace tapestry::lua
