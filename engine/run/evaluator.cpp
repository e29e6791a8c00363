#include "engine/run/evaluator.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "engine/device/host_backend.hpp"
#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/fusion_groups.hpp"
#include "engine/poly/signature.hpp"
#include "engine/run/find_moments.hpp"
#include "engine/run/retry.hpp"
#include "engine/run/run_block.hpp"
#include "engine/run/schedule.hpp"
#include "engine/telemetry/cancel.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"
#include "engine/telemetry/trace.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"

namespace tapestry {

namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// One node of this observation.
struct Slot {
  const Node* node = nullptr;
  std::shared_ptr<Value> value;  // computed here; freed when `uses` reaches 0
  int uses = 0;                  // input edges still to read it
  int moments_of = -1;           // sum(x): the slot of the sum((x - m)^2) it computes too
  int seen = 0;                  // the walk (walk_) that last visited it
  int reg = -1, reg_walk = 0;    // its register in the program built in walk reg_walk
  int absorbs = -1;              // a reduction: the slot of the map it computes chunk by chunk
  int prog = -1;                 // its program in the schedule (a program, or a map a reduction absorbs)
  bool root = false;
  bool program = false;  // a map that runs its group (itself and what is inlined) as one program
  bool inlined = false;  // lives only inside its consumer's map program
  bool banded = false;   // a stencil computed band by band inside its map (run_banded)
  bool kept = false;     // published with the roots (keep_if_held)
};

// What an evaluation works in, kept between evaluations (WorkspaceLease): a loop of small
// observations then allocates nothing for its bookkeeping once warm.
struct Workspace {
  plan::FusionGroups groups;  // slot i is node i of groups
  std::vector<Slot> slots;
  std::vector<int> kept;                           // non-roots published with the roots
  std::vector<int> pending;                        // release_inputs' work list
  std::vector<std::pair<int, int>> banded_leaves;  // {register, slot} of the last build_program
  std::vector<std::pair<int, int>> moments;        // find_moments' pairs
  std::vector<int> root_slots;                     // the slot of each root
};

// One workspace per evaluation in progress on this thread (an evaluation does not start
// another, but nothing here relies on that).
class WorkspaceLease {
 public:
  WorkspaceLease() {
    if (free_list().empty()) {
      ws_ = std::make_unique<Workspace>();
    } else {
      ws_ = std::move(free_list().back());
      free_list().pop_back();
    }
  }
  ~WorkspaceLease() {
    ws_->slots.clear();  // values are freed now, not at the next evaluation
    if (free_list().size() < 4) free_list().push_back(std::move(ws_));
  }
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  Workspace& get() { return *ws_; }

 private:
  static std::vector<std::unique_ptr<Workspace>>& free_list() {
    thread_local std::vector<std::unique_ptr<Workspace>> list;
    return list;
  }
  std::unique_ptr<Workspace> ws_;
};

// One evaluation: the ordered subgraph, which maps fold into their consumer, and the values
// computed so far (freed after their last use). A CG iteration observes five graphs of a few
// nodes each, so the bookkeeping is one slot per node, by its index in plan::FusionGroups,
// and input edges as slot numbers: flat arrays in a reused Workspace, no hash container.
class Evaluation {
 public:
  Evaluation(const std::vector<NodeRef>& roots, Workspace& w)
      : roots_(roots),
        g_(w.groups),
        slots_(w.slots),
        kept_(w.kept),
        pending_(w.pending),
        banded_leaves_(w.banded_leaves),
        moments_(w.moments),
        root_slots(w.root_slots) {}
  ~Evaluation() {  // after a throw: no kept program keeps a buffer alive
    if (Schedule* sc = schedule_ ? schedule_->get() : nullptr)
      for (ProgramPlan& p : sc->programs) unbind(p.program);
  }
  Evaluation(const Evaluation&) = delete;
  Evaluation& operator=(const Evaluation&) = delete;

  void run() {
    const double t0 = now();
    decide_fusion();
    const double t1 = now();  // (one clock read for both: five observations a CG iteration)
    stats().time_schedule += t1 - t0;
    int64_t kernels = 0;
    for (const Slot& s : slots_) kernels += runs(s);
    Progress progress(kernels);
    const bool tracing = trace::enabled();
    for (int i : *order_) {
      Slot& s = slot(i);
      if (!runs(s)) continue;  // leaves, fused nodes
      if (cancel_requested()) throw Cancelled();
      const double k0 = tracing ? trace::now_us() : 0;
      // {this, i} fits std::function's in-place storage; [&] (three references) allocated.
      run_retried(node(i), [this, i] { slot(i).value = compute(i); });
      keep_if_held(i);
      if (tracing) trace_kernel(i, k0);
      ++stats().nodes_evaluated;
      release_inputs(i);
      progress.advance(1);
    }
    stats().time_run += now() - t1;
    if (tracing)
      trace::record({"phase", "evaluate", 0, trace::kPhases, t0 * 1e6, (now() - t0) * 1e6,
                     cat_str("\"kernels\":", kernels)});
    // Publish only after everything succeeded: a failure leaves no root changed.
    for (size_t q = 0; q < roots_.size(); ++q) {
      const NodeRef& r = roots_[q];
      if (r->value) continue;
      const Slot& s = slot(root_slots_[q]);
      internal_check(s.value != nullptr);
      set_value(*r, contiguous(s.value));
    }
    for (int i : kept_) set_value(*slot(i).node, slot(i).value);
  }

 private:
  static bool runs(const Slot& s) { return !(s.node->value || s.inlined || s.banded); }
  const Slot& slot(int i) const { return slots_[static_cast<size_t>(i)]; }
  Slot& slot(int i) { return slots_[static_cast<size_t>(i)]; }
  // The slot of input k of slot i.
  int input(int i, size_t k) const { return edges_[static_cast<size_t>(first_edge_[i]) + k]; }
  const Node& node(int i) const { return *slot(i).node; }

  // A node the user's Lua code still holds that this evaluation materializes anyway (a
  // matmul output read by a fused map, say) keeps its value: the next observation that reads
  // it (CG's r - alpha * Ap after p . Ap) reads it instead of computing it again. Only a
  // value that owns its whole buffer, so no fused-away or larger buffer is kept through it,
  // and only a small one: a Lua temporary (x:matmul(w) inside a longer expression) is held
  // too until the collector runs, and a chain of large ones must still be freed as it goes.
  // Not a node without inputs (tp.randn): the release rule never drops its value, so a
  // consumer's node (every evaluated tensor keeps its inputs) would pin it for good.
  void keep_if_held(int i) {
    Slot& s = slot(i);
    if (s.root || s.node->inputs.empty() || s.node->holders.load(std::memory_order_relaxed) <= 0 ||
        !whole(*s.value) || s.value->v.buf->bytes() > kKeepMaxBytes)
      return;
    s.kept = true;
    kept_.push_back(i);
  }

  // One "kernel" event on rank 0 (a fused map names its root op and how many it absorbed).
  void trace_kernel(int i, double t0_us) {
    const Node& n = node(i);
    const double dur = trace::now_us() - t0_us;
    int fused = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) fused += slot(input(i, k)).inlined ? 1 : 0;
    trace::record({"kernel", std::string(op_def(n.op).name), 0, trace::kCompute, t0_us, dur,
                   cat_str("\"shape\":", trace::json_string(shape_str(n.shape)),
                           ",\"bytes\":", numel(n.shape) * static_cast<int64_t>(dtype_size(n.dtype)),
                           fused ? ",\"fused_inputs\":" + std::to_string(fused) : std::string())});
  }

  // The fusion rules are plan::group_fusion's (shared with plan::fuse). A map absorbed by a
  // reduction counts as inlined here: run_map_reduce computes it chunk by chunk.
  // A graph shaped like an earlier one takes that one's decisions (schedule.hpp): binding its
  // nodes to that one's slots is all it repeats.
  void decide_fusion() {
    kept_.clear();
    schedule_.emplace(roots_, g_.nodes);
    if (const Schedule* sc = schedule_->get()) {
      const size_t n = sc->keys.size();
      first_edge_ = sc->first_edge.data();
      edges_ = sc->edges.data();
      order_ = &sc->order;
      root_slots_ = sc->root_slots.data();
      slots_.resize(n);
      for (size_t i = 0; i < n; ++i) {
        const SlotPlan& p = sc->slots[i];
        Slot& s = slots_[i];
        s = Slot{};
        s.node = g_.nodes[i];
        s.uses = p.uses;
        s.moments_of = p.moments_of;
        s.absorbs = p.absorbs;
        s.prog = p.program;
        s.root = p.root;
        s.inlined = p.inlined;
        s.banded = p.banded;
        s.program = !s.inlined && !s.node->value && op_kind(s.node->op) == OpKind::Map;
      }
      stats().fused_ops += sc->fused_maps;
      return;
    }
    plan::group_fusion(roots_, g_);
    const size_t n = static_cast<size_t>(g_.size());
    first_edge_ = g_.first_edge.data();
    edges_ = g_.edges.data();
    order_ = &g_.order;
    root_slots.clear();
    for (const NodeRef& r : roots_) root_slots.push_back(g_.index_of(r.get()));
    root_slots_ = root_slots.data();
    slots_.assign(n, Slot{});
    for (size_t i = 0; i < n; ++i) {
      Slot& s = slots_[i];
      s.node = g_.nodes[i];
      s.uses = g_.uses[i];
      s.root = g_.root[i] != 0;
      s.inlined = g_.inlined[i] != 0;
    }
    for (size_t i = 0; i < n; ++i)
      if (const int m = g_.absorbs[i]; m >= 0) slot(m).inlined = true, slots_[i].absorbs = m;
    for (Slot& s : slots_) s.program = !s.inlined && !s.node->value && op_kind(s.node->op) == OpKind::Map;
    find_moments(g_, moments_);
    for (const auto& [s1, s2] : moments_) slot(s1).moments_of = s2;
    stats().fused_ops += static_cast<uint64_t>(g_.fused_maps);
    for (int i = 0; i < static_cast<int>(n); ++i) {
      if (!runs(slot(i)) || !slot(i).program) continue;
      ++walk_;
      find_banded(i, i);
    }
    remember();
  }

  // The decisions just taken, for the next graph of this structure (its programs are filled in
  // as they are first built).
  void remember() {
    std::unique_ptr<Schedule> sc = make_schedule(g_, roots_);
    if (!sc) return;
    sc->fused_maps = static_cast<uint64_t>(g_.fused_maps);
    sc->slots.resize(slots_.size());
    int programs = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& s = slots_[i];
      if ((s.program && runs(s)) || (s.absorbs >= 0 && runs(s))) {
        Slot& m = s.absorbs >= 0 ? slot(s.absorbs) : s;
        if (m.prog < 0) m.prog = programs++;
      }
    }
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      SlotPlan& p = sc->slots[i];
      p.uses = s.uses;
      p.moments_of = s.moments_of;
      p.absorbs = s.absorbs;
      p.program = s.prog;
      p.root = s.root;
      p.inlined = s.inlined;
      p.banded = s.banded;
    }
    sc->programs.resize(static_cast<size_t>(programs));
    schedule_->reset(std::move(sc));
  }

  // A stencil (Correlate) read only by the map group of `root`, of root's shape: computed band
  // by band of rows inside that map (run_banded), so a step like u + c * stencil(u) reads u
  // and writes its result once, with the stencil's output living in a cache-sized band.
  void find_banded(int root, int m) {
    const Shape& shape = node(root).shape;
    for (size_t k = 0; k < node(m).inputs.size(); ++k) {
      const int j = input(m, k);
      Slot& s = slot(j);
      const Node& in = *s.node;
      if (s.inlined) {
        if (s.seen != walk_) {
          s.seen = walk_;
          find_banded(root, j);
        }
        continue;
      }
      if (in.op == Op::Correlate && !in.value && !s.root && s.uses == 1 && in.shape == shape &&
          !in.shape.empty() && numel(in.shape) >= kBandMinElems && in.shape[0] > 1)
        s.banded = true;
    }
  }

  const View& slot_view(int i) const {
    const Slot& s = slot(i);
    if (s.node->value) return s.node->value->view();
    internal_check(s.value != nullptr);
    return s.value->view();
  }
  const View& input_view(int i, size_t k) const { return slot_view(input(i, k)); }

  // After slot i (and the group fused into it) ran: one use less for every input edge of
  // every group member; a value nobody needs any more is freed.
  void release_inputs(int i) {
    ++walk_;
    slot(i).seen = walk_;
    pending_.assign(1, i);
    while (!pending_.empty()) {
      const int m = pending_.back();
      pending_.pop_back();
      for (size_t k = 0; k < node(m).inputs.size(); ++k) {
        const int j = input(m, k);
        Slot& s = slot(j);
        if (s.inlined || s.banded) {
          if (s.seen != walk_) {
            s.seen = walk_;
            pending_.push_back(j);
          }
        } else if (--s.uses == 0 && !s.root && !s.kept) {
          s.value.reset();
        }
      }
    }
  }

  std::shared_ptr<Value> alloc(DType t, const Shape& s) {
    const size_t bytes = static_cast<size_t>(numel(s)) * dtype_size(t);
    try {
      auto v = Value::alloc(t, s);
      stats().bytes_allocated += bytes;
      return v;
    } catch (const std::bad_alloc&) {
      user_error("out of memory allocating ", bytes, " bytes for a ", dtype_name(t), " tensor of shape ",
                 shape_str(s));
    }
  }

  // Contiguous from the start of its buffer, and the whole buffer.
  static bool whole(const Value& v) {
    return v.v.is_contiguous() && v.v.offset == 0 &&
           v.v.buf->bytes() == static_cast<size_t>(v.v.numel() * dtype_size(v.v.dtype));
  }

  std::shared_ptr<Value> contiguous(const std::shared_ptr<Value>& v) {
    if (whole(*v)) return v;
    auto out = alloc(v->v.dtype, v->v.shape);
    cpu_backend().copy(v->v, out->v);
    return out;
  }

  // Runs slot i: a map group as one program (its banded stencils inside it), a reduction of an
  // absorbed map chunk by chunk (or as a variance's one pass), a view as a view of its input,
  // and any other node through run_node, the engine's one per-op dispatcher.
  std::shared_ptr<Value> compute(int i) {
    const Node& n = node(i);
    ++stats().kernels;
    Slot& s = slot(i);
    if (s.program) {
      cpu::MapProgram& p = program(i);
      auto out = alloc(n.dtype, n.shape);
      if (banded_leaves_.empty()) cpu_backend().map(p, out->v, prepared(i));
      else run_banded(i, p, out->v);
      unbind(p);
      return out;
    }
    if (s.absorbs >= 0 || s.moments_of >= 0 || centred_.count(i)) return reduce(i);
    if (is_view_op(n)) {
      --stats().kernels;  // views move no data unless a reshape needs a copy
      return view_of(i);
    }
    if (op_kind(n.op) == OpKind::Matmul) {  // as HostBackend::matmul, without wrapping 3 views
      auto out = alloc(n.dtype, n.shape);
      cpu::run_matmul(input_view(i, 0), input_view(i, 1), out->v);
      return out;
    }
    std::vector<DeviceView> ins;
    ins.reserve(n.inputs.size());
    for (size_t k = 0; k < n.inputs.size(); ++k) ins.push_back(HostBackend::wrap(input_view(i, k)));
    auto out = alloc(n.dtype, n.shape);
    run_node_into(cpu_backend(), n, ins, HostBackend::wrap(out->v));
    return out;
  }

  // A reduction: a variance's pass (moments_pass), or of the map it absorbed, chunk by chunk,
  // or of its input's value.
  std::shared_ptr<Value> reduce(int i) {
    const Node& n = node(i);
    auto out = alloc(n.dtype, n.shape);
    if (moments_pass(i, out->v)) return out;
    const std::vector<int> dims = attrs_of<ReduceAttrs>(n).dims;
    const int in = input(i, 0);
    if (slot(in).inlined) run_map_reduce(n, in, dims, out->v);
    else cpu_backend().reduce(n.op, slot_view(in), dims, out->v);
    return out;
  }

  // reduce(map(...)): the CPU backend computes the map chunk by chunk (HostBackend::map_reduce).
  void run_map_reduce(const Node& reduce, int map_slot, const std::vector<int>& dims, const View& out) {
    cpu::MapProgram& p = program(map_slot);
    cpu_backend().map_reduce(p, node(map_slot).shape, reduce.op, dims, out, prepared(map_slot));
    unbind(p);
  }

  // A variance (find_moments): the sum s = sum(x) computes, in the same pass
  // over x, the moments that the later sum((x - m)^2) needs; that one then only applies
  // sum (x - m)^2 = m2 + count * (mean - m)^2 with the m the graph computed from s. False: run
  // the reduction as usual (x is not contiguous, or this is not such a pair).
  bool moments_pass(int i, const View& out) {
    const Node& n = node(i);
    if (auto it = centred_.find(i); it != centred_.end()) {
      const Centred c = std::move(it->second);
      centred_.erase(it);
      const View& m = slot_view(c.mean);  // x - m's m: broadcast over the reduced dims
      const int64_t rows = static_cast<int64_t>(c.rows.size());
      const int kept = static_cast<int>(n.shape.size());
      internal_check(out.is_contiguous() && out.numel() == rows && m.rank() >= kept);
      dispatch_float(n.dtype, [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* mp = m.ptr<T>();
        T* o = out.ptr<T>();
        for (int64_t r = 0; r < rows; ++r) {
          int64_t off = 0;
          for (int64_t q = r, d = kept - 1; d >= 0; --d) {
            off += (q % n.shape[d]) * m.strides[d];
            q /= n.shape[d];
          }
          const cpu::Moments& mo = c.rows[r];
          const double dm = (mo.shift - static_cast<double>(mp[off])) + mo.dmean;
          o[r] = static_cast<T>(mo.m2 + static_cast<double>(mo.count) * dm * dm);
        }
      });
      return true;
    }
    const int centred = slot(i).moments_of;
    if (centred < 0) return false;
    const View& x = input_view(i, 0);
    if (!x.is_contiguous()) return false;
    const int64_t rows = std::max<int64_t>(1, numel(n.shape));
    internal_check(out.is_contiguous() && out.numel() == rows);
    Centred c;
    c.rows.resize(static_cast<size_t>(rows));
    cpu_backend().moments(x, rows, c.rows.data());
    dispatch_float(n.dtype, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      T* o = out.ptr<T>();
      for (int64_t r = 0; r < rows; ++r) o[r] = static_cast<T>(c.rows[r].sum);
    });
    // The centred sum's map is square(x - m): its second leaf is m (an expand).
    c.mean = input(input(input(centred, 0), 0), 1);
    centred_[centred] = std::move(c);
    return true;
  }

  template <class F> static void dispatch_float(DType t, F&& f) {
    if (t == DType::F32) f(static_cast<float*>(nullptr));
    else if (t == DType::F64) f(static_cast<double*>(nullptr));
    else internal_fail(__FILE__, __LINE__, "moments of a non-float dtype");
  }

  // The map `root` whose program has banded stencils among its leaves (placeholders in p): the
  // CPU backend computes each stencil band by band inside the map (HostBackend::map_banded).
  void run_banded(int root, cpu::MapProgram& p, const View& out) {
    std::vector<HostBackend::Stencil> stencils;
    for (const auto& [leaf, j] : banded_leaves_) {
      const Node* w = slot(j).node;
      HostBackend::Stencil st{leaf, input_view(j, 0), input_view(j, 1), {}};
      for (int64_t pad : attrs_of<CorrelateAttrs>(*w).pad_before) st.origin.push_back(-pad);
      stencils.push_back(std::move(st));
    }
    internal_check(out.shape == node(root).shape);
    cpu_backend().map_banded(p, stencils, out);
  }

  std::shared_ptr<Value> view_of(int i) {
    const View& in = input_view(i, 0);
    auto v = std::make_shared<Value>();
    const Node& n = node(i);
    // A reshape of contiguous data (the matvec's two): its view directly, without run_block's
    // Where and the copies of the shape that view_layout makes.
    if (n.op == Op::Reshape && in.is_contiguous()) {
      v->v.buf = in.buf;
      v->v.dtype = in.dtype;
      v->v.offset = in.offset;
      v->v.shape = n.shape;
      v->v.strides = contiguous_strides(n.shape);
      return v;
    }
    if (view_layout(node(i), in, v->v)) return v;
    ++stats().kernels;  // a reshape the strides cannot express
    auto copy = alloc(in.dtype, in.shape);
    cpu_backend().copy(in, copy->v);
    internal_check(view_layout(node(i), copy->v, v->v));
    return v;
  }

  // The fused group of a map: the root plus the maps and constants inlined into it.
  bool in_group(int i, bool is_root) const { return is_root || slot(i).inlined; }

  // The map program of `root` (a map group, or the map a reduction absorbs), its leaves and
  // constants bound to this graph's: built the first time the schedule meets it, re-bound after.
  cpu::MapProgram& program(int root) {
    const int k = slot(root).prog;
    if (k < 0) {  // no schedule kept for this graph
      one_off_ = cpu::MapProgram{};
      build_program(root, one_off_, nullptr);
      return one_off_;
    }
    ProgramPlan& pp = schedule_->get()->programs[static_cast<size_t>(k)];
    if (!pp.built) {
      pp.program = cpu::MapProgram{};
      pp.leaf_slots.clear();
      pp.banded.clear();
      pp.constants.clear();
      build_program(root, pp.program, &pp);
      pp.built = true;
      return pp.program;
    }
    for (size_t r = 0; r < pp.leaf_slots.size(); ++r) {
      const int j = pp.leaf_slots[r];
      if (!slot(j).banded) pp.program.leaves[r] = slot_view(j);
    }
    for (const auto& [ins, j] : pp.constants) {
      const FullAttrs a = attrs_of<FullAttrs>(node(j));
      pp.program.instrs[static_cast<size_t>(ins)].real = a.real;
      pp.program.instrs[static_cast<size_t>(ins)].integer = a.integer;
    }
    banded_leaves_ = pp.banded;
    return pp.program;
  }

  // The registers kept with root's program (ProgramPlan), or none when no schedule is kept.
  cpu::PreparedMap* prepared(int root) {
    const int k = slot(root).prog;
    return k < 0 ? nullptr : &schedule_->get()->programs[static_cast<size_t>(k)].prepared;
  }

  // A kept program must not keep its leaves' buffers alive until the next run.
  static void unbind(cpu::MapProgram& p) {
    for (View& v : p.leaves) v.buf.reset();
  }

  // Registers are per build (reg_walk): a constant inlined into several maps has one in each.
  // plan, if given, records where each leaf and constant came from (ProgramPlan).
  void build_program(int root, cpu::MapProgram& p, ProgramPlan* plan) {
    ++walk_;
    banded_leaves_.clear();
    members_ = 0;
    plan_ = plan;
    collect_leaves(root, true, p);
    p.instrs.reserve(static_cast<size_t>(members_));
    emit(root, true, p);
    if (plan) plan->banded = banded_leaves_;
    plan_ = nullptr;
  }

  // Leaves (values computed outside the group) take the first registers.
  void collect_leaves(int i, bool is_root, cpu::MapProgram& p) {
    Slot& s = slot(i);
    if (in_group(i, is_root)) {
      if (s.seen == walk_) return;  // a DAG: x*x must not double the walk
      s.seen = walk_;
      ++members_;
      for (size_t k = 0; k < s.node->inputs.size(); ++k) collect_leaves(input(i, k), false, p);
      return;
    }
    if (s.reg_walk == walk_) return;
    s.reg_walk = walk_;
    s.reg = static_cast<int>(p.leaves.size());
    if (plan_) plan_->leaf_slots.push_back(i);
    if (s.banded) {  // computed per band by run_banded: a placeholder here
      banded_leaves_.push_back({s.reg, i});
      p.leaves.emplace_back();
      return;
    }
    p.leaves.push_back(slot_view(i));
  }

  // Instructions in dependency order; returns slot i's register.
  int emit(int i, bool is_root, cpu::MapProgram& p) {
    Slot& s = slot(i);
    if (s.reg_walk == walk_) return s.reg;
    internal_check(in_group(i, is_root));
    const Node* n = s.node;
    MapInstr ins{n->op, n->dtype, n->dtype};
    if (n->op == Op::Full) {
      const FullAttrs a = attrs_of<FullAttrs>(*n);
      ins.real = a.real;
      ins.integer = a.integer;
      if (plan_) plan_->constants.push_back({static_cast<int>(p.instrs.size()), i});
    } else {
      int* args[3] = {&ins.a, &ins.b, &ins.c};
      for (size_t k = 0; k < n->inputs.size(); ++k) *args[k] = emit(input(i, k), false, p);
      ins.in = n->inputs.back()->dtype;  // Where: the dtype of a and b; Cast: the source
    }
    p.instrs.push_back(ins);
    s.reg_walk = walk_;
    s.reg = static_cast<int>(p.leaves.size() + p.instrs.size()) - 1;
    return s.reg;
  }

  const std::vector<NodeRef>& roots_;
  plan::FusionGroups& g_;  // the workspace's (see Workspace)
  std::vector<Slot>& slots_;
  std::vector<int>& kept_;
  std::vector<int>& pending_;
  std::vector<std::pair<int, int>>& banded_leaves_;
  std::vector<std::pair<int, int>>& moments_;
  std::vector<int>& root_slots;  // the workspace's, for a graph with no schedule
  // The graph's edges, order and root slots: the schedule's, or g_'s when it has none.
  const int* first_edge_ = nullptr;
  const int* edges_ = nullptr;
  const std::vector<int>* order_ = nullptr;
  const int* root_slots_ = nullptr;
  std::optional<ScheduleLease> schedule_;  // this graph's decisions, kept for the next like it
  ProgramPlan* plan_ = nullptr;            // build_program's record, while it builds one
  cpu::MapProgram one_off_;                // a program of a graph with no schedule kept
  int walk_ = 0;                           // numbers the graph walks (Slot::seen)
  int members_ = 0;                        // group members of the last build_program
  static constexpr int64_t kBandMinElems = int64_t(1) << 18;  // smaller stencils run whole
  static constexpr size_t kKeepMaxBytes = size_t(1) << 20;    // keep_if_held's bound
  struct Centred {
    std::vector<cpu::Moments> rows;  // per output element of the centred sum
    int mean = -1;                   // the slot of the broadcast m
  };
  std::unordered_map<int, Centred> centred_;  // by the centred sum's slot; the sum(x) pass fills it
};

}  // namespace

void evaluate(const std::vector<NodeRef>& roots) {
  ++stats().observations;
  bool all_done = true;
  for (const NodeRef& r : roots) all_done = all_done && r->value;
  if (all_done) return;
  WorkspaceLease ws;
  Evaluation(roots, ws.get()).run();
}

}  // namespace tapestry
