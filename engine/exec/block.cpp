// run_block: one block of one op, from exactly the input slices its signature names.
// Every case leans on the signature's arithmetic: a block's output slice and input slices are
// boxes computed by the projections, so a case only has to say how the slices line up.
#include "engine/exec/block.hpp"

#include <cmath>
#include <limits>
#include <new>
#include <type_traits>

#include "engine/ir/error.hpp"
#include "engine/ir/fused.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/strided.hpp"

namespace tapestry {

namespace {

using poly::Box;

std::shared_ptr<Value> alloc(DType t, const Shape& s) {
  try {
    return Value::alloc(t, s);
  } catch (const std::bad_alloc&) {
    user_error("out of memory allocating a ", dtype_name(t), " block of shape ", shape_str(s));
  }
}

std::vector<int64_t> ones(size_t rank) { return std::vector<int64_t>(rank, 1); }

cpu::MapProgram map_program(const FusedProgram& fp, const std::vector<View>& leaves) {
  internal_check(static_cast<int>(leaves.size()) == fp.num_leaves);
  cpu::MapProgram p;
  p.leaves = leaves;
  for (const FusedInstr& i : fp.instrs) p.instrs.push_back(map_instr(i));
  return p;
}

// A single map op is the one-instruction program over its inputs.
FusedProgram single_map(const Node& n) {
  FusedProgram p;
  p.num_leaves = static_cast<int>(n.inputs.size());
  FusedInstr i{n.op, n.dtype, n.inputs.back()->dtype};  // Where: the dtype of a and b; Cast: the source
  int* regs[3] = {&i.a, &i.b, &i.c};
  for (int k = 0; k < p.num_leaves; ++k) *regs[k] = k;
  p.instrs.push_back(i);
  return p;
}

// Copies `src` into out[at ...] (a sub-box of the contiguous output slice).
void place(const View& src, const View& out, const std::vector<int64_t>& at) {
  cpu::copy_view(src, out.sliced(at, ones(at.size()), src.shape));
}

std::shared_ptr<Value> run_view(const Node& n, const poly::Signature& sig, const Box& box,
                                const View& in, const Shape& out_shape) {
  auto out = alloc(n.dtype, out_shape);
  switch (n.op) {
    case Op::Permute:
      cpu::copy_view(in.permuted(std::vector<int>(n.attrs.ints.begin(), n.attrs.ints.end())), out->v);
      return out;
    case Op::Constrain:  // an identity: its layout is the planner's business
      cpu::copy_view(in, out->v);
      return out;
    case Op::Expand:  // broadcast dims are [0..0] in the slice: broadcasting it is the block
      cpu::copy_view(in.expanded(out_shape), out->v);
      return out;
    case Op::Slice: {
      // The slice is the bounding box of start + step * [lo, hi]: the block's first element
      // sits at start + step * lo, and every step-th after it.
      const Box need = sig.input_slice(0, box);
      const size_t r = n.shape.size();
      std::vector<int64_t> start(r), step(n.attrs.ints.begin() + static_cast<std::ptrdiff_t>(r),
                                          n.attrs.ints.end());
      for (size_t t = 0; t < r; ++t) start[t] = n.attrs.ints[t] + step[t] * box.lo[t] - need.lo[t];
      cpu::copy_view(in.sliced(start, step, out_shape), out->v);
      return out;
    }
    case Op::Reshape: {
      // Only the leading factor of a tensor dim is ever split (reshape_sig), so both slices
      // list the same factor boxes in the same row-major order: a flat copy is the reshape.
      View as_in;
      internal_check(out->v.try_reshape(in.shape, as_in));
      cpu::copy_view(in, as_in);
      return out;
    }
    default:
      internal_fail(__FILE__, __LINE__, "not a view op");
  }
}

// Cat and WriteRegion: inputs whose projection is the identity shifted by b and clipped. The
// piece of input i a block holds, sig.input_slice(i, box), lands at output coordinates
// piece - b, i.e. at piece.lo - b - box.lo within the block's output slice.
void place_clipped(const poly::Signature& sig, const Box& box, size_t i, const View& in,
                   const View& out) {
  const Box piece = sig.input_slice(i, box);
  if (piece.empty()) return;
  internal_check(in.buf != nullptr);
  std::vector<int64_t> at(piece.lo.size());
  for (size_t t = 0; t < at.size(); ++t) at[t] = piece.lo[t] - sig.inputs[i].proj.b[t] - box.lo[t];
  place(in, out, at);
}

// The window ops. A block's windows start at image(box).lo of input 0 (stride * first output -
// padding), its slice at input_slice(0, box).lo (clipped to the tensor): the kernels' origin is
// the difference, so padding and halos are the same arithmetic.
std::shared_ptr<Value> run_window(const Node& n, const poly::Signature& sig, const Box& box,
                                  const std::vector<View>& inputs, const Shape& out_shape) {
  const Box img = sig.inputs[0].proj.image(box);
  const Box got = sig.input_slice(0, box);
  internal_check(!got.empty());  // builders keep padding below a window: every block reads x
  auto out = alloc(n.dtype, out_shape);
  auto axis = [&](int t, int64_t stride, int64_t dilation) {
    return cpu::WindowAxis{stride, dilation, img.lo[t] - got.lo[t]};
  };
  const auto& a = n.attrs.ints;
  switch (n.op) {
    case Op::Correlate:
      run_block_into(n, sig, box, inputs, out->v);
      return out;
    case Op::Conv2d: {  // {sh, sw, ph, pw, dh, dw, groups}
      const int64_t per_group = a[6] > 1 ? n.shape[1] / a[6] : std::numeric_limits<int64_t>::max();
      cpu::run_conv2d(inputs[0], inputs[1], axis(2, a[0], a[4]), axis(3, a[1], a[5]), per_group,
                      box.lo[1], out->v);
      return out;
    }
    case Op::MaxPool2d: case Op::AvgPool2d:  // {kh, kw, sh, sw, ph, pw}
      cpu::run_pool2d(n.op, inputs[0], a[0], a[1], axis(2, a[2], 1), axis(3, a[3], 1), out->v);
      return out;
    default:
      internal_fail(__FILE__, __LINE__, "not a window op");
  }
}

std::vector<int> reduced_dims(const std::vector<int64_t>& ints) {
  return std::vector<int>(ints.begin(), ints.end());
}

}  // namespace

cpu::MapInstr map_instr(const FusedInstr& i) {
  cpu::MapInstr m{i.op, i.out, i.in, i.a, i.b, i.c};
  m.real = i.real;
  m.integer = i.integer;
  return m;
}

std::shared_ptr<Value> run_block(const Node& n, const poly::Signature& sig, const Box& box,
                                 const std::vector<View>& inputs) {
  internal_check(box.rank() == sig.rank() && sig.space_box().contains(box) && !box.empty());
  internal_check(inputs.size() == sig.inputs.size());
  // The caller's slices must be exactly the projections' (empty where clipped away).
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Box need = sig.input_slice(i, box);
    if (need.empty()) continue;
    internal_check(inputs[i].buf != nullptr && inputs[i].dtype == sig.inputs[i].dtype &&
                   inputs[i].shape == need.extents());
  }
  const Shape out_shape = sig.output_slice(box).extents();
  switch (op_kind(n.op)) {
    case OpKind::Source:
      internal_fail(__FILE__, __LINE__, "a source is held, never run");
    case OpKind::Generate: {
      auto out = alloc(n.dtype, out_shape);  // the space is the output: box.lo is the origin
      cpu::run_generate(n.op, n.attrs, n.shape, box.lo, out->v);
      return out;
    }
    case OpKind::Map: {
      auto out = alloc(n.dtype, out_shape);
      run_block_into(n, sig, box, inputs, out->v);
      return out;
    }
    case OpKind::Reduce: {
      auto out = alloc(n.dtype, out_shape);
      cpu::run_reduce(n.op, inputs[0], reduced_dims(n.attrs.ints), out->v);
      return out;
    }
    case OpKind::ArgReduce: {
      // signature_of never lets a block split the reduced dims: local indices are global.
      for (int j = 0; j < sig.rank(); ++j)
        if (sig.space[j].kind == poly::IndexDim::Reduction)
          internal_check(box.extent(j) == sig.space[j].extent);
      auto out = alloc(n.dtype, out_shape);
      const int dim = n.attrs.ints.empty() ? -1 : static_cast<int>(n.attrs.ints[0]);
      cpu::run_argreduce(n.op, inputs[0], dim, out->v);
      return out;
    }
    case OpKind::Matmul: {  // A[b, i, k-range] @ B[b, k-range, j]: a partial sum when k is split
      auto out = alloc(n.dtype, out_shape);
      cpu::run_matmul(inputs[0], inputs[1], out->v);
      return out;
    }
    case OpKind::View:
      return run_view(n, sig, box, inputs[0], out_shape);
    case OpKind::Cat: {
      auto out = alloc(n.dtype, out_shape);
      for (size_t i = 0; i < inputs.size(); ++i) place_clipped(sig, box, i, inputs[i], out->v);
      return out;
    }
    case OpKind::Write: {
      auto out = alloc(n.dtype, out_shape);
      cpu::copy_view(inputs[0], out->v);  // the base: identity, the whole block
      place_clipped(sig, box, 1, inputs[1], out->v);
      return out;
    }
    case OpKind::Window:
      return run_window(n, sig, box, inputs, out_shape);
    case OpKind::Fused: {
      auto out = alloc(n.dtype, out_shape);
      if (n.op == Op::FusedMap) {
        run_block_into(n, sig, box, inputs, out->v);
        return out;
      }
      // The program over the block's slice, then the reduction: one temporary of the slice's
      // size. A kernel that reduces each tile as the map produces it (no temporary) is the
      // next step; this keeps the executor and the planner independent of it.
      const FusedReduction r = decode_fused_reduce(n);
      auto tmp = alloc(r.program.instrs.back().out, box.extents());
      cpu::run_map(map_program(r.program, inputs), tmp->v);
      cpu::run_reduce(r.op, tmp->v, r.dims, out->v);
      return out;
    }
  }
  internal_fail(__FILE__, __LINE__, "run_block: unknown op kind");
}

cpu::MapProgram block_map_program(const Node& n) {
  internal_check(op_kind(n.op) == OpKind::Map || n.op == Op::FusedMap);
  return map_program(n.op == Op::FusedMap ? decode_fused_map(n) : single_map(n),
                     std::vector<View>(n.inputs.size()));
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

bool runs_into(const Node& n) {
  return op_kind(n.op) == OpKind::Map || n.op == Op::FusedMap || n.op == Op::Correlate;
}

void run_block_into(const Node& n, const poly::Signature& sig, const Box& box,
                    const std::vector<View>& inputs, const View& out, bool stream_out) {
  internal_check(runs_into(n) && out.shape == sig.output_slice(box).extents() && out.dtype == n.dtype);
  if (op_kind(n.op) == OpKind::Map || n.op == Op::FusedMap) {
    cpu::MapProgram p = map_program(n.op == Op::FusedMap ? decode_fused_map(n) : single_map(n), inputs);
    p.stream_out = stream_out;
    return cpu::run_map(p, out);
  }
  // Correlate: the kernel's origin is where the block's windows start (image of the box)
  // relative to the slice it was given (clipped to the tensor): padding and halos alike.
  const Box img = sig.inputs[0].proj.image(box);
  const Box got = sig.input_slice(0, box);
  internal_check(!got.empty());
  std::vector<int64_t> origin(out.shape.size());
  for (size_t t = 0; t < origin.size(); ++t) origin[t] = img.lo[t] - got.lo[t];
  cpu::run_correlate(inputs[0], inputs[1], origin, out);
}

void combine_partials(poly::CombineKind kind, const View& acc, const View& part) {
  const std::optional<Monoid> m = poly::monoid_of(kind);
  internal_check(m.has_value() && "combine_partials: not an elementwise combine");
  cpu::combine_into(*m, acc, part);
}

}  // namespace tapestry
