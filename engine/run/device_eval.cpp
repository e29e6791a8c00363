#include "engine/run/device_eval.hpp"

#include <chrono>
#include <limits>
#include <new>
#include <unordered_map>
#include <unordered_set>

#include "engine/run/run_block.hpp"
#include "engine/device/host_backend.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/telemetry/cancel.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/fused.hpp"
#include "engine/plan/fusion_groups.hpp"
#include "engine/poly/signature.hpp"

namespace tapestry {

namespace {

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::vector<int64_t> ones(size_t rank) { return std::vector<int64_t>(rank, 1); }

// One node of the observation and where its value is: on the device, on the host, or both.
struct Slot {
  const Node* node = nullptr;
  DeviceView dev;  // mem == nullptr: not on the device
  View host;       // buf == nullptr: not on the host (a leaf's value is)
  int uses = 0;    // input edges still to read it
  bool root = false;
  bool inlined = false;  // lives only inside its consumer's map program
  bool is_view = false;  // a View op: made from its input's data when first read
};

class DeviceEvaluation {
 public:
  DeviceEvaluation(const std::vector<NodeRef>& roots, DeviceBackend& dev) : roots_(roots), dev_(dev) {}

  void run() {
    const double t0 = now();
    const plan::FusionGroups g = plan::group_fusion(roots_);
    for (int i : g.order) {
      const Node* n = g.nodes[static_cast<size_t>(i)];
      topo_.push_back(n);
      Slot& s = slots_[n];
      s.node = n;
      if (n->value) s.host = n->value->view();
      else s.is_view = op_kind(n->op) == OpKind::View;
      s.uses = g.uses[static_cast<size_t>(i)];
      s.inlined = g.inlined[static_cast<size_t>(i)] != 0;
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
  bool on_device(const Slot& s) { return s.dev.mem || (s.is_view && on_device(slot(s.node->inputs[0].get()))); }

  // The value on the device, uploaded on first use (a View: its input's, reshaped).
  const DeviceView& device(Slot& s) {
    if (s.dev.mem) return s.dev;
    if (s.is_view) {
      s.dev = apply_view(dev_, *s.node, device(slot(s.node->inputs[0].get())));
    } else {
      internal_check(s.host.buf != nullptr);
      s.dev = device_alloc(dev_, s.host.dtype, s.host.shape);
      dev_.upload(s.host, s.dev);
      stats().bytes_to_device += bytes_of(s.host);
    }
    return s.dev;
  }

  // The value on the host, downloaded on first use (a View of host data: no copy).
  const View& host(Slot& s) {
    if (s.host.buf) return s.host;
    if (s.is_view && on_host(slot(s.node->inputs[0].get()))) {
      const View in = host(slot(s.node->inputs[0].get()));
      s.host = cpu_.view(apply_view(cpu_, *s.node, HostBackend::wrap(in)));
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
    DeviceView out = run_node(be, n, on_dev);
    if (on_dev) s.dev = std::move(out);
    else s.host = cpu_.view(out);
  }

  bool device_runs(const Node& n) {
    if (op_kind(n.op) == OpKind::Map) {
      for (const Node* m : group_members(n))
        if (!dev_.supports(*m)) return false;
      return true;
    }
    if (!dev_.supports(n)) return false;
    if (n.op == Op::FusedMap || n.op == Op::FusedReduce) {  // one kernel: it must fit
      const MapLimits lim = dev_.map_limits();
      const FusedProgram p = n.op == Op::FusedMap ? decode_fused_map(n) : decode_fused_reduce(n).program;
      return p.num_leaves <= lim.leaves && static_cast<int>(p.instrs.size()) <= lim.instrs;
    }
    return true;
  }

  DeviceView run_node(DeviceBackend& be, const Node& n, bool on_dev) {
    switch (op_kind(n.op)) {
      case OpKind::Source:
        internal_fail(__FILE__, __LINE__, "source without a value");
      case OpKind::View:
        internal_fail(__FILE__, __LINE__, "a view is made when read, never run");
      case OpKind::Generate: {
        DeviceView out = device_alloc(be, n.dtype, n.shape);
        be.generate(n.op, n.attrs, n.shape, std::vector<int64_t>(n.shape.size(), 0), out);
        return out;
      }
      case OpKind::Map:
        return run_map_group(be, n, on_dev);
      case OpKind::Reduce: {
        DeviceView out = device_alloc(be, n.dtype, n.shape);
        be.reduce(n.op, read(n.inputs[0].get(), on_dev), std::vector<int>(n.attrs.ints.begin(), n.attrs.ints.end()),
                  out);
        return out;
      }
      case OpKind::ArgReduce: {
        DeviceView out = device_alloc(be, n.dtype, n.shape);
        const int dim = n.attrs.ints.empty() ? -1 : static_cast<int>(n.attrs.ints[0]);
        be.argreduce(n.op, read(n.inputs[0].get(), on_dev), dim, out);
        return out;
      }
      case OpKind::Matmul: {
        DeviceView out = device_alloc(be, n.dtype, n.shape);
        be.matmul(read(n.inputs[0].get(), on_dev), read(n.inputs[1].get(), on_dev), out);
        return out;
      }
      case OpKind::Cat: {
        DeviceView out = device_alloc(be, n.dtype, n.shape);
        const int dim = static_cast<int>(n.attrs.ints[0]);
        std::vector<int64_t> start(n.shape.size(), 0);
        for (const NodeRef& in : n.inputs) {
          Shape count = n.shape;
          count[dim] = in->shape[dim];
          if (count[dim] > 0)
            be.copy(read(in.get(), on_dev), out.with(out.layout.sliced(start, ones(start.size()), count)));
          start[dim] += in->shape[dim];
        }
        return out;
      }
      case OpKind::Write: {
        DeviceView out = device_alloc(be, n.dtype, n.shape);
        const DeviceView value = read(n.inputs[1].get(), on_dev);
        be.copy(read(n.inputs[0].get(), on_dev), out);
        be.copy(value, out.with(out.layout.sliced(n.attrs.ints, ones(n.shape.size()), value.shape())));
        return out;
      }
      case OpKind::Window:
        return run_window(be, n, on_dev);
      case OpKind::Fused:
        return run_fused(be, n, on_dev);
    }
    internal_fail(__FILE__, __LINE__, "unknown op kind");
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
  template <class RegOf>
  static cpu::MapInstr instr(const Node& m, RegOf&& reg_of) {
    cpu::MapInstr ins{m.op, m.dtype, m.dtype};
    if (m.op == Op::Full) {
      ins.real = m.attrs.reals.at(0);
      ins.integer = m.attrs.ints.at(0);
      return ins;
    }
    int* args[3] = {&ins.a, &ins.b, &ins.c};
    for (size_t i = 0; i < m.inputs.size(); ++i) *args[i] = reg_of(m.inputs[i].get());
    ins.in = m.inputs.back()->dtype;  // Where: the dtype of a and b; Cast: the source
    return ins;
  }

  // One block over the whole index space, as run_block does: each input is the slice the
  // signature names, and a window's origin is where the windows start relative to that slice
  // (padding falls out of the same arithmetic).
  DeviceView run_window(DeviceBackend& be, const Node& n, bool on_dev) {
    const poly::Signature sig = poly::signature_of(n);
    const poly::Box all = sig.space_box();
    std::vector<DeviceView> ins;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const poly::Box need = sig.input_slice(i, all);
      const DeviceView x = read(n.inputs[i].get(), on_dev);
      ins.push_back(x.with(x.layout.sliced(need.lo, ones(need.rank()), need.extents())));
    }
    const poly::Box img = sig.inputs[0].proj.image(all);
    const poly::Box got = sig.input_slice(0, all);
    internal_check(!got.empty());
    auto origin = [&](int t) { return img.lo[t] - got.lo[t]; };
    DeviceView out = device_alloc(be, n.dtype, n.shape);
    const auto& a = n.attrs.ints;
    switch (n.op) {
      case Op::Correlate: {
        std::vector<int64_t> o(n.shape.size());
        for (size_t t = 0; t < o.size(); ++t) o[t] = origin(static_cast<int>(t));
        be.correlate(ins[0], ins[1], o, out);
        return out;
      }
      case Op::Conv2d: {  // {sh, sw, ph, pw, dh, dw, groups}; the whole space: channels from 0
        const int64_t per_group = a[6] > 1 ? n.shape[1] / a[6] : std::numeric_limits<int64_t>::max();
        be.conv2d(ins[0], ins[1], {a[0], a[4], origin(2)}, {a[1], a[5], origin(3)}, per_group, 0, out);
        return out;
      }
      case Op::MaxPool2d:
      case Op::AvgPool2d:  // {kh, kw, sh, sw, ph, pw}
        be.pool2d(n.op, ins[0], a[0], a[1], {a[2], 1, origin(2)}, {a[3], 1, origin(3)}, out);
        return out;
      default:
        internal_fail(__FILE__, __LINE__, "not a window op");
    }
  }

  // FusedMap / FusedReduce (made by plan::fuse): the program, then the reduction.
  DeviceView run_fused(DeviceBackend& be, const Node& n, bool on_dev) {
    const bool reduce = n.op == Op::FusedReduce;
    FusedReduction r;
    if (reduce) {
      r = decode_fused_reduce(n);
    } else {
      r.program = decode_fused_map(n);
      r.shape = n.shape;
    }
    DeviceMapProgram p;
    for (const NodeRef& in : n.inputs) p.leaves.push_back(read(in.get(), on_dev));
    for (const FusedInstr& i : r.program.instrs) p.instrs.push_back(map_instr(i));
    DeviceView out = device_alloc(be, n.dtype, n.shape);
    if (!reduce) {
      be.map(p, out);
      return out;
    }
    DeviceView tmp = device_alloc(be, r.program.instrs.back().out, r.shape);
    be.map(p, tmp);
    be.reduce(r.op, tmp, r.dims, out);
    return out;
  }

  // A View op on data of backend be: View's arithmetic, or a copy for a reshape the strides
  // cannot express.
  static DeviceView apply_view(DeviceBackend& be, const Node& n, const DeviceView& in) {
    const View& l = in.layout;
    switch (n.op) {
      case Op::Permute:
        return in.with(l.permuted(std::vector<int>(n.attrs.ints.begin(), n.attrs.ints.end())));
      case Op::Expand:
        return in.with(l.expanded(n.shape));
      case Op::Constrain:  // one rank: the layout is the whole tensor
        return in;
      case Op::Slice: {
        const size_t r = n.shape.size();
        std::vector<int64_t> start(n.attrs.ints.begin(), n.attrs.ints.begin() + static_cast<std::ptrdiff_t>(r));
        std::vector<int64_t> step(n.attrs.ints.begin() + static_cast<std::ptrdiff_t>(r), n.attrs.ints.end());
        return in.with(l.sliced(start, step, n.shape));
      }
      case Op::Reshape: {
        View out;
        if (l.try_reshape(n.shape, out)) return in.with(out);
        ++stats().kernels;
        DeviceView copy = device_alloc(be, l.dtype, l.shape);
        be.copy(in, copy);
        internal_check(copy.layout.try_reshape(n.shape, out));
        return copy.with(out);
      }
      default:
        internal_fail(__FILE__, __LINE__, "not a view op");
    }
  }

  std::vector<NodeRef> roots_;
  DeviceBackend& dev_;
  HostBackend cpu_;
  std::vector<const Node*> topo_;
  std::unordered_map<const Node*, Slot> slots_;
};

}  // namespace

void evaluate_on_device(const std::vector<NodeRef>& roots, DeviceBackend& dev) {
  ++stats().observations;
  bool all_done = true;
  for (const NodeRef& r : roots) all_done = all_done && r->value;
  if (all_done) return;
  DeviceEvaluation(roots, dev).run();
}

}  // namespace tapestry
