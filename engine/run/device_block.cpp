// run_block_on: run_block's cases (engine/run/run_block.cpp) over a DeviceBackend's entry points.
#include "engine/run/device_block.hpp"

#include <limits>

#include "engine/run/run_block.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/fused.hpp"

namespace tapestry {

namespace {

using poly::Box;

std::vector<int64_t> ones(size_t rank) { return std::vector<int64_t>(rank, 1); }

// A single map op as the one-instruction program over its inputs.
cpu::MapInstr single_instr(const Node& n) {
  cpu::MapInstr m{n.op, n.dtype, n.inputs.back()->dtype};  // Where: the dtype of a and b; Cast: the source
  int* regs[3] = {&m.a, &m.b, &m.c};
  for (size_t k = 0; k < n.inputs.size(); ++k) *regs[k] = static_cast<int>(k);
  return m;
}

// out[at ...] = src, for a sub-box of the block's output slice.
void place(DeviceBackend& dev, const DeviceView& src, const DeviceView& out, const std::vector<int64_t>& at) {
  dev.copy(src, out.with(out.layout.sliced(at, ones(at.size()), src.shape())));
}

// Cat and WriteRegion: the piece of input i the block holds lands at piece - b (block.cpp).
void place_clipped(DeviceBackend& dev, const poly::Signature& sig, const Box& box, size_t i, const DeviceView& in,
                   const DeviceView& out) {
  const Box piece = sig.input_slice(i, box);
  if (piece.empty()) return;
  internal_check(in.mem != nullptr);
  std::vector<int64_t> at(piece.lo.size());
  for (size_t t = 0; t < at.size(); ++t) at[t] = piece.lo[t] - sig.inputs[i].proj.b[t] - box.lo[t];
  place(dev, in, out, at);
}

void run_view(DeviceBackend& dev, const Node& n, const poly::Signature& sig, const Box& box, const DeviceView& in,
              const DeviceView& out) {
  const View& l = in.layout;
  switch (n.op) {
    case Op::Permute:
      return dev.copy(in.with(l.permuted(std::vector<int>(n.attrs.ints.begin(), n.attrs.ints.end()))), out);
    case Op::Constrain:
      return dev.copy(in, out);
    case Op::Expand:
      return dev.copy(in.with(l.expanded(out.shape())), out);
    case Op::Slice: {
      const Box need = sig.input_slice(0, box);
      const size_t r = n.shape.size();
      std::vector<int64_t> start(r), step(n.attrs.ints.begin() + static_cast<std::ptrdiff_t>(r), n.attrs.ints.end());
      for (size_t t = 0; t < r; ++t) start[t] = n.attrs.ints[t] + step[t] * box.lo[t] - need.lo[t];
      return dev.copy(in.with(l.sliced(start, step, out.shape())), out);
    }
    case Op::Reshape: {  // both slices list the same elements in row-major order (block.cpp)
      View as_in;
      internal_check(out.layout.try_reshape(in.shape(), as_in));
      return dev.copy(in, out.with(as_in));
    }
    default:
      internal_fail(__FILE__, __LINE__, "not a view op");
  }
}

void run_window(DeviceBackend& dev, const Node& n, const poly::Signature& sig, const Box& box,
                const std::vector<DeviceView>& in, const DeviceView& out) {
  const Box img = sig.inputs[0].proj.image(box);
  const Box got = sig.input_slice(0, box);
  internal_check(!got.empty());
  auto origin = [&](int t) { return img.lo[t] - got.lo[t]; };
  const auto& a = n.attrs.ints;
  switch (n.op) {
    case Op::Correlate: {
      std::vector<int64_t> o(out.shape().size());
      for (size_t t = 0; t < o.size(); ++t) o[t] = origin(static_cast<int>(t));
      return dev.correlate(in[0], in[1], o, out);
    }
    case Op::Conv2d: {  // {sh, sw, ph, pw, dh, dw, groups}
      const int64_t per_group = a[6] > 1 ? n.shape[1] / a[6] : std::numeric_limits<int64_t>::max();
      return dev.conv2d(in[0], in[1], {a[0], a[4], origin(2)}, {a[1], a[5], origin(3)}, per_group, box.lo[1], out);
    }
    case Op::MaxPool2d:
    case Op::AvgPool2d:  // {kh, kw, sh, sw, ph, pw}
      return dev.pool2d(n.op, in[0], a[0], a[1], {a[2], 1, origin(2)}, {a[3], 1, origin(3)}, out);
    default:
      internal_fail(__FILE__, __LINE__, "not a window op");
  }
}

}  // namespace

bool device_takes(const DeviceBackend& dev, const Node& n) {
  if (!dev.supports(n)) return false;
  if (n.op != Op::FusedMap && n.op != Op::FusedReduce) return true;
  const MapLimits lim = dev.map_limits();  // one kernel: the program must fit it
  const FusedProgram p = n.op == Op::FusedMap ? decode_fused_map(n) : decode_fused_reduce(n).program;
  return p.num_leaves <= lim.leaves && static_cast<int>(p.instrs.size()) <= lim.instrs;
}

DeviceView run_block_on(DeviceBackend& dev, const Node& n, const poly::Signature& sig, const Box& box,
                        const std::vector<DeviceView>& inputs) {
  internal_check(box.rank() == sig.rank() && sig.space_box().contains(box) && !box.empty());
  internal_check(inputs.size() == sig.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Box need = sig.input_slice(i, box);
    if (need.empty()) continue;
    internal_check(inputs[i].mem != nullptr && inputs[i].dtype() == sig.inputs[i].dtype &&
                   inputs[i].shape() == need.extents());
  }
  DeviceView out = device_alloc(dev, n.dtype, sig.output_slice(box).extents());
  switch (op_kind(n.op)) {
    case OpKind::Source:
      internal_fail(__FILE__, __LINE__, "a source is held, never run");
    case OpKind::Generate:  // the space is the output: box.lo is the origin
      dev.generate(n.op, n.attrs, n.shape, box.lo, out);
      return out;
    case OpKind::Map:
      dev.map(DeviceMapProgram{inputs, {single_instr(n)}}, out);
      return out;
    case OpKind::Reduce:
      dev.reduce(n.op, inputs[0], std::vector<int>(n.attrs.ints.begin(), n.attrs.ints.end()), out);
      return out;
    case OpKind::ArgReduce:  // signature_of never splits the reduced dim: local indices are global
      dev.argreduce(n.op, inputs[0], n.attrs.ints.empty() ? -1 : static_cast<int>(n.attrs.ints[0]), out);
      return out;
    case OpKind::Matmul:  // a partial sum when k is split
      dev.matmul(inputs[0], inputs[1], out);
      return out;
    case OpKind::View:
      run_view(dev, n, sig, box, inputs[0], out);
      return out;
    case OpKind::Cat:
      for (size_t i = 0; i < inputs.size(); ++i) place_clipped(dev, sig, box, i, inputs[i], out);
      return out;
    case OpKind::Write:
      dev.copy(inputs[0], out);  // the base: identity, the whole block
      place_clipped(dev, sig, box, 1, inputs[1], out);
      return out;
    case OpKind::Window:
      run_window(dev, n, sig, box, inputs, out);
      return out;
    case OpKind::Fused: {
      const bool reduce = n.op == Op::FusedReduce;
      const FusedReduction r = reduce ? decode_fused_reduce(n) : FusedReduction{};
      const FusedProgram& fp = reduce ? r.program : decode_fused_map(n);
      DeviceMapProgram p{inputs, {}};
      for (const FusedInstr& i : fp.instrs) p.instrs.push_back(map_instr(i));
      if (!reduce) {
        dev.map(p, out);
        return out;
      }
      // The program over the block's slice, then the reduction (one temporary, as on the CPU).
      DeviceView tmp = device_alloc(dev, fp.instrs.back().out, box.extents());
      dev.map(p, tmp);
      dev.reduce(r.op, tmp, r.dims, out);
      return out;
    }
  }
  internal_fail(__FILE__, __LINE__, "run_block_on: unknown op kind");
}

}  // namespace tapestry
