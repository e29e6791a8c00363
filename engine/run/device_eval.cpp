#include "engine/run/device_eval.hpp"

#include <chrono>
#include <new>
#include <unordered_map>
#include <unordered_set>

#include "engine/device/host_backend.hpp"
#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/fused.hpp"
#include "engine/plan/fusion_groups.hpp"
#include "engine/poly/signature.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/run/retry.hpp"
#include "engine/run/run_block.hpp"
#include "engine/telemetry/cancel.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry {

namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// One node of the observation and where its value is: on the device, on the host, or both.
struct Slot {
  const Node* node = nullptr;
  DeviceView dev;                     // mem == nullptr: not on the device
  View host;                          // buf == nullptr: not on the host (a leaf's value is)
  std::shared_ptr<const Value> leaf;  // a leaf's value (the key of its kept device copy)
  int uses = 0;                       // input edges still to read it
  bool root = false;
  bool inlined = false;  // lives only inside its consumer's map program
  bool is_view = false;  // a View op: made from its input's data when first read
  bool program = false;  // a map: runs its group (itself and what is inlined) as one program
};

class DeviceEvaluation {
 public:
  DeviceEvaluation(const std::vector<NodeRef>& roots, DeviceBackend& dev, DeviceCopies* copies)
      : roots_(roots), dev_(dev), copies_(copies) {}

  void run() {
    const double t0 = now();
    const plan::FusionGroups g = plan::group_fusion(roots_);
    for (int i : g.order) {
      const Node* n = g.nodes[static_cast<size_t>(i)];
      topo_.push_back(n);
      Slot& s = slots_[n];
      s.node = n;
      if (n->value) {
        s.host = n->value->view();
        s.leaf = n->value;
      } else s.is_view = is_view_op(*n);
      s.uses = g.uses[static_cast<size_t>(i)];
      s.inlined = g.inlined[static_cast<size_t>(i)] != 0;
      s.program = !n->value && !s.inlined && op_kind(n->op) == OpKind::Map;
      if (s.inlined && op_kind(n->op) == OpKind::Map) ++stats().fused_ops;
    }
    for (const NodeRef& r : roots_) slot(r.get()).root = true;
    stats().time_schedule += now() - t0;

    const double t1 = now();
    int64_t kernels = 0;
    for (const Node* n : topo_) kernels += runs(slot(n)) ? 1 : 0;
    Progress progress(kernels);
    for (const Node* n : topo_) {
      Slot& s = slot(n);
      if (!runs(s)) continue;  // leaves, fused members, views (made when read)
      if (cancel_requested()) throw Cancelled();
      compute(s);
      ++stats().nodes_evaluated;
      release_inputs(*n);
      progress.advance(1);
    }
    // Every root's host value first, then publish: a failed download changes no root.
    std::vector<std::pair<const Node*, std::shared_ptr<const Value>>> results;
    std::unordered_set<const Node*> seen;
    for (const NodeRef& r : roots_)
      if (!r->value && seen.insert(r.get()).second) results.push_back({r.get(), result(slot(r.get()))});
    // A root computed on the device keeps its device value as the copy of the value it became.
    if (copies_)
      for (auto& [n, v] : results)
        if (const Slot& s = slot(n); s.dev.mem) copies_->keep(v, s.dev);
    for (auto& [n, v] : results) set_value(*n, std::move(v));
    stats().time_run += now() - t1;
  }

 private:
  static bool runs(const Slot& s) { return !(s.node->value || s.inlined || s.is_view); }

  Slot& slot(const Node* n) {
    auto it = slots_.find(n);
    internal_check(it != slots_.end());
    return it->second;
  }

  // Whether the value can be had without a transfer (a View is where its input is).
  bool on_host(const Slot& s) { return s.host.buf || (s.is_view && on_host(slot(s.node->inputs[0].get()))); }
  bool on_device(const Slot& s) {
    return s.dev.mem || (s.is_view && on_device(slot(s.node->inputs[0].get())));
  }

  // The value on the device, uploaded on first use (a View: its input's, reshaped).
  const DeviceView& device(Slot& s) {
    if (s.dev.mem) return s.dev;
    if (s.is_view) {
      s.dev = view_node(dev_, *s.node, device(slot(s.node->inputs[0].get())));
    } else if (auto kept = copies_ && s.leaf ? copies_->find(s.leaf) : std::nullopt) {
      s.dev = std::move(*kept);
    } else {
      internal_check(s.host.buf != nullptr);
      s.dev = device_alloc(dev_, s.host.dtype, s.host.shape);
      dev_.upload(s.host, s.dev);
      stats().bytes_to_device += bytes_of(s.host);
      if (copies_ && s.leaf) copies_->keep(s.leaf, s.dev);
    }
    return s.dev;
  }

  // The value on the host, downloaded on first use (a View of host data: no copy).
  const View& host(Slot& s) {
    if (s.host.buf) return s.host;
    if (s.is_view && on_host(slot(s.node->inputs[0].get()))) {
      const View in = host(slot(s.node->inputs[0].get()));
      s.host = cpu_.view(view_node(cpu_, *s.node, HostBackend::wrap(in)));
    } else {
      s.host = download(device(s));
    }
    return s.host;
  }

  // Input x as `be` reads it: a device view, or a wrapped host view for the CPU.
  DeviceView read(const Node* x, bool on_dev) {
    Slot& s = slot(x);
    return on_dev ? device(s) : HostBackend::wrap(host(s));
  }

  // A root's value for publishing: contiguous, owning its buffer, in host memory.
  std::shared_ptr<const Value> result(Slot& s) {
    if (!on_host(s)) {
      auto v = std::make_shared<Value>();
      v->v = download(device(s));
      return v;
    }
    const View& h = host(s);
    if (h.is_contiguous() && h.offset == 0 &&
        h.buf->bytes() == static_cast<size_t>(h.numel()) * dtype_size(h.dtype)) {
      auto v = std::make_shared<Value>();
      v->v = h;
      return v;
    }
    auto v = host_alloc(h.dtype, h.shape);
    cpu::copy_view(h, v->v);
    return v;
  }

  static uint64_t bytes_of(const View& v) { return static_cast<uint64_t>(v.numel()) * dtype_size(v.dtype); }

  View download(const DeviceView& d) {
    auto v = host_alloc(d.dtype(), d.shape());
    dev_.download(d, v->v);
    stats().bytes_from_device += bytes_of(v->v);
    return v->v;
  }

  std::shared_ptr<Value> host_alloc(DType t, const Shape& s) {
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

  // After n (and the group fused into it) ran: one use less for every input edge of every
  // group member; a value nobody reads any more is freed (a View then releases its input).
  void release_inputs(const Node& n) {
    std::vector<const Node*> todo{&n};
    std::unordered_set<const Node*> members{&n};
    while (!todo.empty()) {
      const Node* m = todo.back();
      todo.pop_back();
      for (const NodeRef& in : m->inputs) {
        if (slot(in.get()).inlined) {
          if (members.insert(in.get()).second) todo.push_back(in.get());
        } else {
          release(in.get());
        }
      }
    }
  }

  void release(const Node* x) {
    Slot& s = slot(x);
    if (--s.uses > 0 || s.root) return;
    s.dev = DeviceView{};
    s.host = View{};
    if (s.is_view) release(x->inputs[0].get());
  }

  // Runs n where it can: on the device when it has kernels for n (for a map, for every op of
  // its group), else on the CPU with the same code over host buffers.
  void compute(Slot& s) {
    const Node& n = *s.node;
    const bool on_dev = device_runs(n);
    DeviceBackend& be = on_dev ? static_cast<DeviceBackend&>(dev_) : cpu_;
    ++stats().kernels;
    if (on_dev) ++stats().device_blocks;
    DeviceView out;
    run_retried(n, [&] { out = run_one(be, n, on_dev); });
    if (on_dev) s.dev = std::move(out);
    else s.host = cpu_.view(out);
  }

  bool device_runs(const Node& n) {
    if (slot(&n).program) {
      for (const Node* m : group_members(n))
        if (!dev_.supports(*m)) return false;
      return true;
    }
    return backend_takes(dev_, n);
  }

  // A map runs its group as one program; any other node runs through run_node, the engine's
  // one per-op dispatcher, on whichever backend computes it.
  DeviceView run_one(DeviceBackend& be, const Node& n, bool on_dev) {
    if (slot(&n).program) return run_map_group(be, n, on_dev);
    std::vector<DeviceView> ins;
    ins.reserve(n.inputs.size());
    for (const NodeRef& in : n.inputs) ins.push_back(read(in.get(), on_dev));
    return run_node(be, n, ins);
  }

  // The maps and constants fused into root (root included), inputs before their readers.
  std::vector<const Node*> group_members(const Node& root) {
    std::vector<const Node*> order;
    std::unordered_set<const Node*> seen;
    std::vector<std::pair<const Node*, size_t>> stack{{&root, 0}};
    seen.insert(&root);
    while (!stack.empty()) {
      auto& [m, next] = stack.back();
      if (next == m->inputs.size()) {
        order.push_back(m);
        stack.pop_back();
        continue;
      }
      const Node* in = m->inputs[next++].get();
      if (slot(in).inlined && seen.insert(in).second) stack.push_back({in, 0});
    }
    return order;
  }

  // A map and the group fused into it: one program, or one kernel per op when the program is
  // larger than the backend takes.
  DeviceView run_map_group(DeviceBackend& be, const Node& root, bool on_dev) {
    const std::vector<const Node*> members = group_members(root);
    std::unordered_map<const Node*, int> reg;
    std::vector<const Node*> leaves;
    for (const Node* m : members)
      for (const NodeRef& in : m->inputs)
        if (!slot(in.get()).inlined && reg.emplace(in.get(), static_cast<int>(leaves.size())).second)
          leaves.push_back(in.get());
    const MapLimits lim = be.map_limits();
    if (static_cast<int>(leaves.size()) > lim.leaves || static_cast<int>(members.size()) > lim.instrs)
      return run_map_ops(be, members, on_dev);
    DeviceMapProgram p;
    for (const Node* l : leaves) p.leaves.push_back(read(l, on_dev));
    for (const Node* m : members) {
      p.instrs.push_back(instr(*m, [&](const Node* x) { return reg.at(x); }));
      reg[m] = static_cast<int>(leaves.size() + p.instrs.size()) - 1;
    }
    DeviceView out = device_alloc(be, root.dtype, root.shape);
    be.map(p, out);
    return out;
  }

  // The group op by op: each map is a one-instruction program over its inputs' buffers.
  DeviceView run_map_ops(DeviceBackend& be, const std::vector<const Node*>& members, bool on_dev) {
    std::unordered_map<const Node*, DeviceView> done;
    for (const Node* m : members) {
      DeviceView out = device_alloc(be, m->dtype, m->shape);
      if (m->op == Op::Full) {
        be.generate(Op::Full, m->attrs, m->shape, std::vector<int64_t>(m->shape.size(), 0), out);
      } else {
        DeviceMapProgram p;
        for (const NodeRef& in : m->inputs) {
          auto it = done.find(in.get());
          p.leaves.push_back(it != done.end() ? it->second : read(in.get(), on_dev));
        }
        int k = 0;
        p.instrs.push_back(instr(*m, [&](const Node*) { return k++; }));
        be.map(p, out);
      }
      ++stats().kernels;
      done[m] = std::move(out);
    }
    --stats().kernels;  // the group's root is counted by compute()
    return done.at(members.back());
  }

  // m as one instruction; reg_of gives the register of each input in order.
  template <class RegOf> static MapInstr instr(const Node& m, RegOf&& reg_of) {
    MapInstr ins{m.op, m.dtype, m.dtype};
    if (m.op == Op::Full) {
      const FullAttrs a = attrs_of<FullAttrs>(m);
      ins.real = a.real;
      ins.integer = a.integer;
      return ins;
    }
    int* args[3] = {&ins.a, &ins.b, &ins.c};
    for (size_t i = 0; i < m.inputs.size(); ++i) *args[i] = reg_of(m.inputs[i].get());
    ins.in = m.inputs.back()->dtype;  // Where: the dtype of a and b; Cast: the source
    return ins;
  }

  std::vector<NodeRef> roots_;
  DeviceBackend& dev_;
  DeviceCopies* copies_;
  HostBackend cpu_;
  std::vector<const Node*> topo_;
  std::unordered_map<const Node*, Slot> slots_;
};

}  // namespace

void evaluate_on_device(const std::vector<NodeRef>& roots, DeviceBackend& dev, DeviceCopies* copies) {
  ++stats().observations;
  bool all_done = true;
  for (const NodeRef& r : roots) all_done = all_done && r->value;
  if (all_done) return;
  if (copies) copies->sweep();
  try {
    DeviceEvaluation(roots, dev, copies).run();
  } catch (const OutOfDeviceMemory&) {
    // The kept copies may be what fills the device: without them the observation may fit.
    if (!copies || copies->size() == 0) throw;
    copies->clear();
    DeviceEvaluation(roots, dev, copies).run();
  }
}

}  // namespace tapestry
