// run_block: one block of one op, from exactly the input slices its signature names.
// Every case leans on the signature's arithmetic: a block's output slice and input slices are
// boxes computed by the projections, so a case only has to say how the slices line up. The
// whole node (run_node) is the block of the whole space, with the signature made only when a
// case needs it.
#include "engine/run/run_block.hpp"

#include <limits>
#include <optional>

#include "engine/device/host_backend.hpp"
#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/fused.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

namespace {

using poly::Box;

std::vector<int64_t> ones(size_t rank) { return std::vector<int64_t>(rank, 1); }

// Where a block lies: a box of a known signature, or the whole node (its signature made on
// first use, its box the whole space, its inputs the whole tensors).
class Where {
 public:
  Where(const Node& n, const poly::Signature& sig, const Box& box) : n_(n), sig_(&sig), box_(&box) {}
  explicit Where(const Node& n) : n_(n) {}

  bool whole() const { return box_ == nullptr; }
  const poly::Signature& sig() {
    if (!sig_) sig_ = &own_sig_.emplace(poly::signature_of(n_));
    return *sig_;
  }
  const Box& box() {
    if (!box_) box_ = &own_box_.emplace(sig().space_box());
    return *box_;
  }
  Shape out_shape() { return whole() ? n_.shape : sig().output_slice(box()).extents(); }
  // The first element of box() along each space dim (a generator's origin).
  std::vector<int64_t> origin() {
    if (whole()) return std::vector<int64_t>(n_.shape.size(), 0);
    return box().lo;
  }
  // Where input i's slice starts in the tensor: the data given starts there.
  std::vector<int64_t> input_lo(size_t i) {
    if (whole()) return std::vector<int64_t>(n_.inputs[i]->shape.size(), 0);
    return sig().input_slice(i, box()).lo;
  }

 private:
  const Node& n_;
  const poly::Signature* sig_ = nullptr;
  const Box* box_ = nullptr;
  std::optional<poly::Signature> own_sig_;
  std::optional<Box> own_box_;
};

// A single map op as the one-instruction program over its inputs.
MapInstr single_instr(const Node& n) {
  MapInstr m{n.op, n.dtype, n.inputs.back()->dtype};  // Where: the dtype of a and b; Cast: the source
  int* regs[3] = {&m.a, &m.b, &m.c};
  for (size_t k = 0; k < n.inputs.size(); ++k) *regs[k] = static_cast<int>(k);
  return m;
}

DeviceMapProgram map_program(const Node& n, const std::vector<DeviceView>& inputs) {
  DeviceMapProgram p{inputs, {}};
  if (n.op != Op::FusedMap) {
    p.instrs.push_back(single_instr(n));
    return p;
  }
  p.instrs = decode_fused_map(n).instrs;
  return p;
}

// The slice `want` of input i, given the data of its slice starting at `lo`.
DeviceView slice_input(const DeviceView& in, const std::vector<int64_t>& lo, const Box& want) {
  std::vector<int64_t> start(want.lo.size());
  for (size_t t = 0; t < start.size(); ++t) start[t] = want.lo[t] - lo[t];
  return in.with(in.layout.sliced(start, ones(start.size()), want.extents()));
}

// A view op over its input's layout (no data moves), for the block `w`; false when a reshape
// needs the data contiguous first.
bool view_geometry(const Node& n, Where& w, const View& l, View& out) {
  switch (n.op) {
    case Op::Permute: out = l.permuted(attrs_of<PermuteAttrs>(n).perm); return true;
    case Op::Constrain:  // an identity: its layout is the planner's business
    case Op::Declare:    // an identity: its properties are the graph's business
      out = l;
      return true;
    case Op::Expand:  // broadcast dims are [0..0] in the slice: broadcasting it is the block
      out = l.expanded(w.out_shape());
      return true;
    case Op::Slice: {
      // The slice is the bounding box of start + step * [lo, hi]: the block's first element
      // sits at start + step * lo, and every step-th after it.
      const SliceAttrs a = attrs_of<SliceAttrs>(n);
      const std::vector<int64_t> lo = w.input_lo(0);
      const std::vector<int64_t> block_lo = w.origin();
      std::vector<int64_t> start(a.starts.size());
      for (size_t t = 0; t < start.size(); ++t) start[t] = a.starts[t] + a.steps[t] * block_lo[t] - lo[t];
      out = l.sliced(start, a.steps, w.out_shape());
      return true;
    }
    case Op::Reshape:
      // Only the leading factor of a tensor dim is ever split (reshape_sig), so both slices
      // list the same factor boxes in the same row-major order: the reshape of the data.
      return l.try_reshape(w.out_shape(), out);
    default: internal_fail(__FILE__, __LINE__, "not a view op");
  }
}

// A view op over its input's data: a view, or a reshape of a contiguous copy.
DeviceView view_of(DeviceBackend& be, const Node& n, Where& w, const DeviceView& in) {
  View out;
  if (view_geometry(n, w, in.layout, out)) return in.with(std::move(out));
  DeviceView copy = device_alloc(be, in.dtype(), in.shape());
  be.copy(in, copy);
  internal_check(view_geometry(n, w, copy.layout, out));
  return copy.with(std::move(out));
}

// Cat and WriteRegion: inputs whose projection is the identity shifted by b and clipped. The
// piece of input i a block holds, sig.input_slice(i, box), lands at output coordinates
// piece - b, i.e. at piece.lo - b - box.lo within the block's output slice.
void place_clipped(DeviceBackend& be, Where& w, size_t i, const DeviceView& in, const DeviceView& out) {
  const Box piece = w.sig().input_slice(i, w.box());
  if (piece.empty()) return;
  internal_check(in.mem != nullptr);
  std::vector<int64_t> at(piece.lo.size());
  for (size_t t = 0; t < at.size(); ++t) at[t] = piece.lo[t] - w.sig().inputs[i].proj.b[t] - w.box().lo[t];
  const DeviceView src = w.whole() ? slice_input(in, w.input_lo(i), piece) : in;
  be.copy(src, out.with(out.layout.sliced(at, ones(at.size()), src.shape())));
}

// The window ops. A block's windows start at image(box).lo of input 0 (stride * first output -
// padding), its slice at input_slice(0, box).lo (clipped to the tensor): the kernels' origin is
// the difference, so padding and halos are the same arithmetic.
void run_window(DeviceBackend& be, const Node& n, Where& w, std::vector<DeviceView> in,
                const DeviceView& out) {
  const poly::Signature& sig = w.sig();
  const Box img = sig.inputs[0].proj.image(w.box());
  const Box got = sig.input_slice(0, w.box());
  internal_check(!got.empty());  // builders keep padding below a window: every block reads x
  if (w.whole())                 // a strided conv may skip the last rows: the kernels take the slice read
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = slice_input(in[i], w.input_lo(i), sig.input_slice(i, w.box()));
  auto origin = [&](int t) { return img.lo[t] - got.lo[t]; };
  const int64_t channel0 = w.whole() ? 0 : w.box().lo[1];
  switch (n.op) {
    case Op::Correlate: {
      std::vector<int64_t> o(out.shape().size());
      for (size_t t = 0; t < o.size(); ++t) o[t] = origin(static_cast<int>(t));
      return be.correlate(in[0], in[1], o, out);
    }
    case Op::Conv2d: {
      const Conv2dAttrs a = attrs_of<Conv2dAttrs>(n);
      const int64_t per_group = a.groups > 1 ? n.shape[1] / a.groups : std::numeric_limits<int64_t>::max();
      return be.conv2d(in[0], in[1], {a.stride[0], a.dilation[0], origin(2)},
                       {a.stride[1], a.dilation[1], origin(3)}, per_group, channel0, out);
    }
    case Op::MaxPool2d:
    case Op::AvgPool2d: {
      const PoolAttrs a = attrs_of<PoolAttrs>(n);
      return be.pool2d(n.op, in[0], a.kernel[0], a.kernel[1], {a.stride[0], 1, origin(2)},
                       {a.stride[1], 1, origin(3)}, out);
    }
    default: internal_fail(__FILE__, __LINE__, "not a window op");
  }
}

// A file's box: read straight into host memory, or through a host buffer onto a device.
void read_load(DeviceBackend& be, const Node& n, const std::vector<int64_t>& origin, const DeviceView& out) {
  const LoadAttrs a = attrs_of<LoadAttrs>(n);
  if (const Buffer* host = out.mem->host_buffer()) {
    View v = out.layout;
    v.buf = std::shared_ptr<Buffer>(out.mem, const_cast<Buffer*>(host));  // owns out.mem
    return read_load_box(a, origin, v);
  }
  auto tmp = Value::alloc(out.dtype(), out.shape());
  read_load_box(a, origin, tmp->view());
  be.upload(tmp->view(), out);
}

// The one switch over op kinds: computes the block `w` of n into `out` (its output slice's
// shape and n's dtype; allocated by the caller).
void run_into(DeviceBackend& be, const Node& n, Where& w, const std::vector<DeviceView>& inputs,
              const DeviceView& out, bool stream_out) {
  switch (op_kind(n.op)) {
    case OpKind::Source: internal_fail(__FILE__, __LINE__, "a source is held, never run");
    case OpKind::Generate:  // the space is the output: the block's first point is the origin
      if (n.op == Op::Load) return read_load(be, n, w.origin(), out);
      return be.generate(n.op, n.attrs, n.shape, w.origin(), out);
    case OpKind::Map: {
      DeviceMapProgram p = map_program(n, inputs);
      p.stream_out = stream_out;
      return be.map(p, out);
    }
    case OpKind::Reduce: return be.reduce(n.op, inputs[0], attrs_of<ReduceAttrs>(n).dims, out);
    case OpKind::ArgReduce:  // signature_of splits no block along the reduced dim: indices are global
      return be.argreduce(n.op, inputs[0], attrs_of<ArgReduceAttrs>(n).dim.value_or(-1), out);
    case OpKind::Matmul:  // A[b, i, k-range] @ B[b, k-range, j]: a partial sum when k is split
      return be.matmul(inputs[0], inputs[1], out);
    case OpKind::View: return be.copy(view_of(be, n, w, inputs[0]), out);
    case OpKind::Cat:
      for (size_t i = 0; i < inputs.size(); ++i) place_clipped(be, w, i, inputs[i], out);
      return;
    case OpKind::Write:
      be.copy(inputs[0], out);  // the base: identity, the whole block
      return place_clipped(be, w, 1, inputs[1], out);
    case OpKind::Window: return run_window(be, n, w, inputs, out);
    case OpKind::Line:  // the signature splits no line: a block's indices and prefixes are global
      return be.line(n.op, n.attrs, inputs, out);
    case OpKind::Index:  // the signature reads the indexed dim whole: positions are local
      return be.index(n.op, n.attrs, inputs, out);
    case OpKind::Linalg:  // the signature splits only batch dims: a block is whole matrices
      return be.linalg(n.op, n.attrs, inputs, out);
    case OpKind::Fused: {
      if (n.op == Op::FusedMap) {
        DeviceMapProgram p = map_program(n, inputs);
        p.stream_out = stream_out;
        return be.map(p, out);
      }
      // The program over the block's slice, reduced over the dims (in cache-sized chunks on
      // the CPU: no temporary of the slice's size).
      const FusedReduction r = decode_fused_reduce(n);
      DeviceMapProgram p{inputs, r.program.instrs};
      return be.map_reduce(p, w.whole() ? r.shape : w.box().extents(), r.op, r.dims, out);
    }
  }
  internal_fail(__FILE__, __LINE__, "run_block: unknown op kind");
}

void check_inputs(const poly::Signature& sig, const Box& box, const std::vector<DeviceView>& inputs) {
  internal_check(box.rank() == sig.rank() && sig.space_box().contains(box) && !box.empty());
  internal_check(inputs.size() == sig.inputs.size());
  // The caller's slices must be exactly the projections' (empty where clipped away).
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Box need = sig.input_slice(i, box);
    if (need.empty()) continue;
    internal_check(inputs[i].mem != nullptr && inputs[i].dtype() == sig.inputs[i].dtype &&
                   inputs[i].shape() == need.extents());
  }
}

DeviceView wrap_input(const View& v) { return v.buf ? HostBackend::wrap(v) : DeviceView{}; }

std::vector<DeviceView> wrap_inputs(const std::vector<View>& inputs) {
  std::vector<DeviceView> out;
  out.reserve(inputs.size());
  for (const View& v : inputs) out.push_back(wrap_input(v));
  return out;
}

}  // namespace

DeviceView run_block(DeviceBackend& be, const Node& n, const poly::Signature& sig, const Box& box,
                     const std::vector<DeviceView>& inputs) {
  check_inputs(sig, box, inputs);
  Where w(n, sig, box);
  DeviceView out = device_alloc(be, n.dtype, w.out_shape());
  run_into(be, n, w, inputs, out, false);
  return out;
}

DeviceView run_node(DeviceBackend& be, const Node& n, const std::vector<DeviceView>& inputs) {
  DeviceView out = device_alloc(be, n.dtype, n.shape);
  run_node_into(be, n, inputs, out);
  return out;
}

void run_node_into(DeviceBackend& be, const Node& n, const std::vector<DeviceView>& inputs,
                   const DeviceView& out) {
  internal_check(inputs.size() == n.inputs.size() && out.shape() == n.shape && out.dtype() == n.dtype);
  Where w(n);
  run_into(be, n, w, inputs, out, false);
}

bool is_view_op(const Node& n) { return op_kind(n.op) == OpKind::View; }

bool view_layout(const Node& n, const View& in, View& out) {
  internal_check(is_view_op(n));
  Where w(n);
  return view_geometry(n, w, in, out);
}

DeviceView view_node(DeviceBackend& be, const Node& n, const DeviceView& input) {
  internal_check(is_view_op(n));
  Where w(n);
  return view_of(be, n, w, input);
}

DeviceView view_block(DeviceBackend& be, const Node& n, const poly::Signature& sig, const Box& box,
                      const DeviceView& input) {
  internal_check(is_view_op(n));
  check_inputs(sig, box, {input});
  Where w(n, sig, box);
  return view_of(be, n, w, input);
}

bool backend_takes(const DeviceBackend& be, const Node& n) {
  if (!be.supports(n)) return false;
  if (n.op != Op::FusedMap && n.op != Op::FusedReduce) return true;
  const MapLimits lim = be.map_limits();  // one kernel: the program must fit it
  const FusedProgram p = n.op == Op::FusedMap ? decode_fused_map(n) : decode_fused_reduce(n).program;
  return p.num_leaves <= lim.leaves && static_cast<int>(p.instrs.size()) <= lim.instrs;
}

bool runs_into(const Node& n) {
  return op_kind(n.op) == OpKind::Map || n.op == Op::FusedMap || n.op == Op::Correlate;
}

void run_block_into(DeviceBackend& be, const Node& n, const poly::Signature& sig, const Box& box,
                    const std::vector<DeviceView>& inputs, const DeviceView& out, bool stream_out) {
  internal_check(runs_into(n) && out.shape() == sig.output_slice(box).extents() && out.dtype() == n.dtype);
  check_inputs(sig, box, inputs);
  Where w(n, sig, box);
  run_into(be, n, w, inputs, out, stream_out);
}

HostBackend& cpu_backend() {
  static HostBackend cpu;  // stateless: every call goes to kernels/cpu
  return cpu;
}

std::shared_ptr<Value> run_block(const Node& n, const poly::Signature& sig, const Box& box,
                                 const std::vector<View>& inputs) {
  const DeviceView out = run_block(cpu_backend(), n, sig, box, wrap_inputs(inputs));
  auto v = std::make_shared<Value>();
  v->v = cpu_backend().view(out);
  return v;
}

void run_block_into(const Node& n, const poly::Signature& sig, const Box& box,
                    const std::vector<View>& inputs, const View& out, bool stream_out) {
  run_block_into(cpu_backend(), n, sig, box, wrap_inputs(inputs), HostBackend::wrap(out), stream_out);
}

cpu::MapProgram block_map_program(const Node& n) {
  internal_check(op_kind(n.op) == OpKind::Map || n.op == Op::FusedMap);
  cpu::MapProgram p;
  p.leaves.resize(n.inputs.size());
  p.instrs = map_program(n, {}).instrs;
  return p;
}

bool run_stencil_axpy_into(const Node& w, const poly::Signature& sig, const Box& box,
                           const std::vector<View>& inputs, const View& u, float c, const View& out,
                           bool stream) {
  if (w.op != Op::Correlate) return false;
  const Box img = sig.inputs[0].proj.image(box);
  const Box got = sig.input_slice(0, box);
  std::vector<int64_t> origin(out.shape.size());
  for (size_t t = 0; t < origin.size(); ++t) origin[t] = img.lo[t] - got.lo[t];
  return cpu::run_correlate_axpy(inputs[0], inputs[1], origin, u, c, out, stream);
}

void combine_partials(poly::CombineKind kind, const View& acc, const View& part) {
  const std::optional<Monoid> m = poly::monoid_of(kind);
  internal_check(m.has_value() && "combine_partials: not an elementwise combine");
  cpu::combine_into(*m, acc, part);
}

}  // namespace tapestry
