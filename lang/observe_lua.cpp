// Metadata (dim, size, numel, #) and observation points (item, totable, eval,
// tostring), plus tp.stats, tp.clock and tp.tensors.
#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <chrono>

#include "engine/ir/build/packed.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/moves.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/run/retry.hpp"
#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "lang/bindings.hpp"
#include "lang/convert.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

int l_dim(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(check_tensor(L, 1)->shape.size()));
  return 1;
}

int l_size(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  if (lua_isnoneornil(L, 2)) {  // the whole shape, as torch's x:size()
    lua_createtable(L, static_cast<int>(x->shape.size()), 0);
    for (size_t i = 0; i < x->shape.size(); ++i) {
      lua_pushinteger(L, x->shape[i]);
      lua_seti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    return 1;
  }
  user_check(!x->shape.empty(), "a scalar tensor has no dimensions");
  lua_pushinteger(L, x->shape[check_dim(L, 2, static_cast<int>(x->shape.size()))]);
  return 1;
}

int l_numel(lua_State* L) {
  lua_pushinteger(L, numel(check_tensor(L, 1)->shape));
  return 1;
}

int l_len(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  user_check(!x->shape.empty(), "a scalar tensor has no length (# needs dimension 1)");
  lua_pushinteger(L, x->shape[0]);
  return 1;
}

int l_item(lua_State* L) {
  if (TensorHandle* h = to_tensor_handle(L, 1); h && h->rec) {
    const Pending& r = *h->rec.get();
    if (numel(r.shape()) == 1 && observe_pending(L, 1, 1)) {
      push_element(L, r.value()->view(), 0);
      return 1;
    }
  }
  const NodeRef x = check_tensor(L, 1);
  if (numel(x->shape) != 1)  // (user_check would format the shape on every call)
    user_error("expects a tensor with exactly one element, got shape ", shape_str(x->shape), " (",
               numel(x->shape), " elements)");
  observe(L, {x});
  push_element(L, x->value->view(), 0);
  return 1;
}

int l_totable(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  observe(L, {x});
  push_totable(L, x->value->view());
  return 1;
}

int l_eval(lua_State* L) {
  const int n = lua_gettop(L);
  // Records alone (x = tp.eval(x + alpha * p)) are computed as they are.
  bool records = n > 0;
  for (int i = 1; i <= n && records; ++i) {
    const TensorHandle* h = to_tensor_handle(L, i);
    records = h && h->rec;
  }
  if (records && observe_pending(L, 1, n)) return n;
  std::vector<NodeRef> xs;
  for (int i = 1; i <= n; ++i) xs.push_back(check_tensor(L, i));
  // Computed is enough: results stay sharded where computed (printing one gathers it).
  Session& s = session_of(L);
  s.telemetry().clear_cancel();
  materialize(s);
  observe_kept(s, xs);
  return n;  // the same Tensors, now backed by data
}

int l_release(lua_State* L) {
  TensorHandle* h = to_tensor_handle(L, 1);
  if (!h) type_error(L, 1, "Tensor");
  h->node = nullptr;
  h->rec.reset();
  return 0;
}

int l_stats(lua_State* L) {
  Session& ses = session_of(L);
  const Stats& s = ses.telemetry().stats;
  lua_createtable(L, 0, 9);
  auto set = [L](const char* k, double v) {
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
  };
  auto seti = [L](const char* k, uint64_t v) {
    lua_pushinteger(L, static_cast<lua_Integer>(v));
    lua_setfield(L, -2, k);
  };
  seti("observations", s.observations);
  seti("nodes_evaluated", s.nodes_evaluated);
  seti("kernels", s.kernels);
  seti("fused_ops", s.fused_ops);
  seti("bytes_allocated", s.bytes_allocated);
  seti("bytes_live", static_cast<uint64_t>(std::max<int64_t>(0, Buffer::live_bytes())));
  seti("blocks_run", s.blocks_run);
  seti("device_blocks", s.device_blocks);
  seti("bytes_to_device", s.bytes_to_device);
  seti("bytes_from_device", s.bytes_from_device);
  seti("messages", s.messages);
  seti("bytes_moved", s.bytes_moved);
  seti("bytes_transfers", s.bytes_transfers);
  seti("bytes_combines", s.bytes_combines);
  seti("bytes_gathered", s.bytes_gathered);
  // Every move of the plans run, by kind: {["all-reduce"] = {count = n, bytes = b}, ...}.
  lua_createtable(L, 0, Stats::kMoveKinds);
  for (int k = 0; k < Stats::kMoveKinds; ++k) {
    lua_createtable(L, 0, 2);
    seti("count", s.move_count[k]);
    seti("bytes", s.move_bytes[k]);
    lua_setfield(L, -2, plan::move_kind_name(static_cast<plan::MoveKind>(k)));
  }
  lua_setfield(L, -2, "collectives");
  seti("bytes_read", s.bytes_read);
  seti("bytes_written", s.bytes_written);
  seti("live_nodes", live_node_count());
  seti("block_retries", block_retries() + (ses.coordinator() ? ses.coordinator()->block_retries() : 0));
  set("time_schedule", s.time_schedule);
  set("time_run", s.time_run);
  set("time_move", s.time_move);
  // A driver's MPI job lost and replaced, and where the stored tensors it restored came from.
  // What had no surviving copy and came back from its lineage or the last checkpoint is not lost.
  const RecoveryStats rs = ses.coordinator() ? ses.coordinator()->recovery() : RecoveryStats{};
  const RecoveryStats& back = ses.recovered();
  seti("job_relaunches", rs.job_relaunches);
  seti("restored_from_survivors", rs.restored_from_survivors);
  seti("restored_from_replicas", rs.restored_from_replicas);
  seti("restored_from_lineage", back.restored_from_lineage);
  seti("restored_from_checkpoint", back.restored_from_checkpoint);
  const uint64_t back_n = back.restored_from_lineage + back.restored_from_checkpoint;
  seti("tensors_lost", rs.tensors_lost > back_n ? rs.tensors_lost - back_n : 0);
  // Memory beyond RAM (engine/session/spill.hpp): this process's spills to --spill-dir, and
  // under MPI every other rank's (each spills its own pieces), as their statuses said.
  const Spill::Counts sp = ses.spill().counts();
  const Job::SpillCounts job_sp = ses.coordinator() ? ses.coordinator()->spills() : Job::SpillCounts{};
  seti("spills", static_cast<uint64_t>(sp.spills + job_sp.spills));
  seti("bytes_spilled", static_cast<uint64_t>(sp.bytes + job_sp.bytes));
  seti("spill_readbacks", static_cast<uint64_t>(sp.readbacks + job_sp.readbacks));
  const plan::PlannerStats& ps = ses.planner().stats;
  seti("plans", ps.plans);
  seti("plan_cache_hits", ps.cache_hits);
  set("time_plan", ps.time_plan);
  return 1;
}

int l_clock(lua_State* L) {
  using namespace std::chrono;
  lua_pushnumber(L, duration<double>(steady_clock::now().time_since_epoch()).count());
  return 1;
}

int l_tensors(lua_State* L) {
  lua_newtable(L);
  lua_Integer i = 1;
  Session& s = session_of(L);
  // After a lost MPI job, the shards that lay on its workers are gone with it.
  const Job* job = s.coordinator();
  const bool job_lost = job && !job->broken().empty();
  for (const auto& [name, e] : s.env().entries()) {
    const NodeRef& n = e.current();
    lua_createtable(L, 0, 6);
    lua_pushstring(L, name.c_str());
    lua_setfield(L, -2, "name");
    // A declared tensor is kept packed (docs/properties.md): its shape is the dense one, its
    // bytes and layout those of what is held.
    const Shape shape = build::read_form(n, s.env().declared(name))->shape;
    lua_createtable(L, static_cast<int>(shape.size()), 0);
    for (size_t d = 0; d < shape.size(); ++d) {
      lua_pushinteger(L, shape[d]);
      lua_seti(L, -2, static_cast<lua_Integer>(d + 1));
    }
    lua_setfield(L, -2, "shape");
    lua_pushboolean(L, shape != n->shape);
    lua_setfield(L, -2, "packed");
    lua_pushstring(L, std::string(dtype_name(n->dtype)).c_str());
    lua_setfield(L, -2, "dtype");
    lua_pushinteger(L, numel(n->shape) * dtype_size(n->dtype));
    lua_setfield(L, -2, "bytes");
    // Where it lies: a stored tensor's shards, else whole on rank 0 (or not computed yet).
    const StoredLayout* st = e.pending ? nullptr : s.stored().layout(n->id);
    const std::string* gone = e.pending ? nullptr : s.stored().lost(n->id);
    const bool lost = gone || (job_lost && st &&
                               std::any_of(st->shards.begin(), st->shards.end(),
                                           [](const plan::Shard& sh) { return sh.rank != 0; }));
    const bool on_disk = !e.pending && s.env().on_disk(n->id);
    const std::string layout = on_disk     ? "on disk"
                               : lost      ? "lost with the MPI job"
                               : st        ? describe_shards(st->shards, n->shape.size())
                               : e.pending ? "not computed"
                                           : "whole on rank 0";
    lua_pushstring(L, layout.c_str());
    lua_setfield(L, -2, "layout");
    lua_pushstring(L, on_disk ? "disk" : "memory");
    lua_setfield(L, -2, "storage");
    const int ranks = st ? st->ranks : s.mesh().ranks;
    std::vector<int64_t> per_rank(static_cast<size_t>(ranks), 0);
    if (st && !lost) per_rank = bytes_per_rank(*st, *n);  // a lost one holds nothing
    else if (!e.pending && !on_disk) per_rank[0] = numel(n->shape) * dtype_size(n->dtype);  // on disk: none
    lua_createtable(L, ranks, 0);
    for (int r = 0; r < ranks; ++r) {
      lua_pushinteger(L, per_rank[r]);
      lua_seti(L, -2, r + 1);
    }
    lua_setfield(L, -2, "bytes_per_rank");
    lua_pushboolean(L, e.pending == nullptr);
    lua_setfield(L, -2, "computed");
    lua_pushboolean(L, lost);
    lua_setfield(L, -2, "lost");
    // A copy that outlives the loss of any one rank: a buddy replica (a driver's MPI job).
    lua_pushboolean(L, st && !lost && job && job->replicated(n->id));
    lua_setfield(L, -2, "replicated");
    lua_seti(L, -2, i++);
  }
  return 1;
}

}  // namespace tapestry::lua
