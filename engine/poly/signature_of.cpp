// signature_of: the one place that knows how each op reaches its operands.
#include <algorithm>
#include <cmath>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/fused.hpp"
#include "engine/poly/reshape.hpp"
#include "engine/poly/signature.hpp"
#include "engine/poly/stencil.hpp"

// A new Op without a case below must not compile (the switch has no default).
#pragma GCC diagnostic error "-Wswitch"

namespace tapestry::poly {

namespace {

IndexDim parallel(std::string name, int64_t extent) {
  return IndexDim{std::move(name), extent, IndexDim::Parallel, CombineKind::None, true};
}
IndexDim reduction(std::string name, int64_t extent, CombineKind c) {
  return IndexDim{std::move(name), extent, IndexDim::Reduction, c, true};
}

Access access_of(const Node& t, Projection p) { return Access{std::move(p), t.shape, t.dtype}; }

// Space = the output's shape, all parallel, output identity: maps, generators, views.
Signature over_output(const Node& n, double flops) {
  Signature s;
  for (size_t d = 0; d < n.shape.size(); ++d) s.space.push_back(parallel(cat_str("d", d + 1), n.shape[d]));
  s.output = access_of(n, Projection::identity(static_cast<int>(n.shape.size())));
  s.flops_per_point = flops;
  return s;
}

// Rough relative costs: enough for the planner to weigh a gelu against an add.
double map_flops(Op op) {
  switch (op) {
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Div:
    case Op::Reciprocal:
    case Op::FloorDiv:
    case Op::Mod: return 4;
    case Op::Exp:
    case Op::Log:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Sigmoid:
    case Op::Pow:
    case Op::Angle:
    case Op::Atan2: return 8;
    case Op::Gelu: return 16;
    default: return 1;
  }
}

Signature map_sig(const Node& n, double flops) {
  Signature s = over_output(n, flops);
  for (const NodeRef& in : n.inputs) {
    internal_check(in->shape == n.shape);  // builders make broadcasting an explicit Expand
    s.inputs.push_back(access_of(*in, Projection::identity(static_cast<int>(n.shape.size()))));
  }
  return s;
}

// A fused program costs what its instructions cost unfused, so that fusing never changes
// which sharding the planner prefers; constants cost nothing.
double program_flops(const FusedProgram& p) {
  double f = 0;
  for (const MapInstr& i : p.instrs) f += i.op == Op::Full ? 0 : map_flops(i.op);
  return f;
}

CombineKind reduce_combine(Op op) {
  const std::optional<Monoid> m = monoid_of(op);
  internal_check(m.has_value() && "not a reduce op");
  return combine_of(*m);
}

// Space = `shape` (the reduced tensor's); `reduced` dims are reductions, the output keeps the
// others. Every input is read with the identity (a reduce has one; a fused reduce's leaves
// all have the program's shape).
Signature reduce_over(const Node& n, const Shape& shape, const std::vector<int>& reduced, CombineKind c) {
  const int r = static_cast<int>(shape.size());
  Signature s;
  std::vector<int> kept;
  for (int d = 0; d < r; ++d) {
    const bool red = std::find(reduced.begin(), reduced.end(), d) != reduced.end();
    s.space.push_back(red ? reduction(cat_str("d", d + 1), shape[d], c)
                          : parallel(cat_str("d", d + 1), shape[d]));
    if (!red) kept.push_back(d);
  }
  for (const NodeRef& in : n.inputs) {
    internal_check(in->shape == shape);
    s.inputs.push_back(access_of(*in, Projection::identity(r)));
  }
  s.output = access_of(n, Projection::select(r, kept));
  s.flops_per_point = 1;
  return s;
}

Signature reduce_sig(const Node& n, const std::vector<int>& reduced, CombineKind c) {
  return reduce_over(n, n.inputs[0]->shape, reduced, c);
}

Signature fused_reduce_sig(const Node& n) {
  const FusedReduction r = decode_fused_reduce(n);
  Signature s = reduce_over(n, r.shape, r.dims, reduce_combine(r.op));
  s.flops_per_point = program_flops(r.program) + 1;
  return s;
}

Signature argreduce_sig(const Node& n, CombineKind c) {
  const int r = static_cast<int>(n.inputs[0]->shape.size());
  std::vector<int> dims;
  if (const std::optional<int> dim = attrs_of<ArgReduceAttrs>(n).dim) {
    dims.push_back(*dim);
  } else {  // the flat index over all dims
    for (int d = 0; d < r; ++d) dims.push_back(d);
  }
  // The reduced dims are never split: a block then sees whole rows, its local index is the
  // global one, and no (value, index) combine is needed.
  Signature s = reduce_sig(n, dims, c);
  for (int d : dims) s.space[d].splittable = false;
  return s;
}

// Line ops: the space is the output, every dim parallel but the line's, which is never split:
// a block holds whole lines, so a scan needs no carry from the blocks before it and a sort no
// merge (the plan gathers a split line first). Searchsorted reads its 1-D sequence whole.
Signature line_sig(const Node& n) {
  const LineAttrs a = attrs_of<LineAttrs>(n);
  if (n.op == Op::Searchsorted) {
    const Node& seq = *n.inputs[0];
    Signature s = over_output(n, std::log2(static_cast<double>(seq.shape[0]) + 1));
    Projection whole(1, static_cast<int>(n.shape.size()));
    whole.w[0] = seq.shape[0];
    s.inputs.push_back(access_of(seq, std::move(whole)));
    s.inputs.push_back(access_of(*n.inputs[1], Projection::identity(static_cast<int>(n.shape.size()))));
    return s;
  }
  const double len = static_cast<double>(n.shape[a.dim]);
  // An FFT costs 5 n log2 n real flops a line (the usual count), so 5 log2 n a point.
  const double flops = n.op == Op::Sort           ? 2 * std::log2(len + 1)
                       : n.op == Op::Fft          ? 5 * std::log2(len + 1)
                       : n.op == Op::Logcumsumexp ? 16
                                                  : 2;
  if ((n.op == Op::Fft || n.op == Op::Sort) && n.inputs[0]->shape[a.dim] != n.shape[a.dim]) {
    // r2c (n reals in, n/2+1 frequencies out), c2r (the other way) and topk (a Sort keeping k
    // of n): the input's line is read whole by every point of the output's. Either real FFT is
    // half the complex transform of the real length n, 2.5 n log2 n flops a line: 5 log2 n a
    // point of r2c's n/2+1 outputs, 2.5 log2 n a point of c2r's n.
    const Node& x = *n.inputs[0];
    const double in_len = static_cast<double>(x.shape[a.dim]);
    const bool c2r = n.op == Op::Fft && !is_complex(n.dtype);
    Signature s = over_output(n, c2r               ? 2.5 * std::log2(len + 1)
                                 : n.op == Op::Fft ? 5 * std::log2(in_len + 1)
                                                   : 2 * std::log2(in_len + 1));
    Projection p = Projection::identity(static_cast<int>(n.shape.size()));
    p.A[a.dim][a.dim] = 0;
    p.w[a.dim] = x.shape[a.dim];
    s.inputs.push_back(access_of(x, std::move(p)));
    s.space[a.dim].splittable = false;
    return s;
  }
  Signature s = map_sig(n, flops);
  s.space[a.dim].splittable = false;
  return s;
}

// Gather, Scatter, ScatterAdd: which element an index names is data, so the operand indexed
// by it is read whole along dim (a full window) and by the identity elsewhere; index (and
// src) follow the space. Gather's space is its output (index's shape), free to split anywhere;
// a scatter's is x's, and its dim is never split (any src element may land anywhere along it).
Signature index_sig(const Node& n) {
  const int dim = attrs_of<IndexAttrs>(n).dim;
  const int r = static_cast<int>(n.shape.size());
  Signature s = over_output(n, 1);
  auto whole_along_dim = [&](const Node& t) {
    Projection p = Projection::identity(r);
    p.A[dim][dim] = 0;
    p.w[dim] = t.shape[dim];
    return access_of(t, std::move(p));
  };
  if (n.op == Op::Gather) {
    s.inputs = {whole_along_dim(*n.inputs[0]), access_of(*n.inputs[1], Projection::identity(r))};
    return s;
  }
  s.space[dim].splittable = false;
  s.inputs = {access_of(*n.inputs[0], Projection::identity(r)), whole_along_dim(*n.inputs[1]),
              whole_along_dim(*n.inputs[2])};
  return s;
}

// Nonzero: the count was observed before the node was built; where each true element lands
// depends on every element before it, so the mask is read whole into one block.
Signature nonzero_sig(const Node& n) {
  const Node& mask = *n.inputs[0];
  Signature s = over_output(n, 1);
  s.space[0].splittable = false;
  Projection p(static_cast<int>(mask.shape.size()), 1);
  for (size_t t = 0; t < mask.shape.size(); ++t) p.w[t] = mask.shape[t];
  s.inputs.push_back(access_of(mask, std::move(p)));
  return s;
}

// LAPACK ops: space {b.., the output's own dims}; the batch dims are free, the rest are
// never split, and every input's last two dims are read whole ("whole on one rank": the plan
// gathers each matrix; a distributed factorization would be another signature, not this one).
Signature linalg_sig(const Node& n) {
  const Node& a = *n.inputs[0];
  const int nb = static_cast<int>(a.shape.size()) - 2;
  const int r = static_cast<int>(n.shape.size());
  internal_check(nb >= 0 && r >= nb);
  Signature s;
  for (int d = 0; d < r; ++d) {
    IndexDim dim = parallel(d < nb ? cat_str("b", d + 1) : cat_str("m", d - nb + 1), n.shape[d]);
    dim.splittable = d < nb;
    s.space.push_back(dim);
  }
  for (const NodeRef& in : n.inputs) {
    internal_check(static_cast<int>(in->shape.size()) == nb + 2);
    Projection p(nb + 2, r);
    for (int t = 0; t < nb; ++t) p.A[t][t] = 1;
    p.w[nb] = in->shape[nb];
    p.w[nb + 1] = in->shape[nb + 1];
    s.inputs.push_back(access_of(*in, std::move(p)));
  }
  s.output = access_of(n, Projection::identity(r));
  // A factorization costs about m n min(m, n) flops per matrix (times a small constant),
  // spread over the matrix's output points.
  const double m = static_cast<double>(a.shape[nb]), k = static_cast<double>(a.shape[nb + 1]);
  double points = 1;
  for (int d = nb; d < r; ++d) points *= static_cast<double>(n.shape[d]);
  const double scale = n.op == Op::Svd || n.op == Op::Eigh ? 10 : 2;
  s.flops_per_point = scale * m * k * std::min(m, k) / points;
  return s;
}

// Y[b.., i, j] = sum_k A[b.., i, k] * B[b.., k, j]: space {b.., i, j, k}.
Signature matmul_sig(const Node& n) {
  const Node& a = *n.inputs[0];
  const Node& b = *n.inputs[1];
  const int nb = static_cast<int>(n.shape.size()) - 2;
  internal_check(nb >= 0 && a.shape.size() == n.shape.size() && b.shape.size() == n.shape.size());
  Signature s;
  std::vector<int> batch;
  for (int d = 0; d < nb; ++d) {
    s.space.push_back(parallel(cat_str("b", d + 1), n.shape[d]));
    batch.push_back(d);
  }
  const int i = nb, j = nb + 1, k = nb + 2;
  s.space.push_back(parallel("i", n.shape[i]));
  s.space.push_back(parallel("j", n.shape[j]));
  s.space.push_back(reduction("k", a.shape.back(), CombineKind::Sum));
  auto with = [&](std::initializer_list<int> tail) {
    std::vector<int> dims = batch;
    dims.insert(dims.end(), tail);
    return Projection::select(nb + 3, dims);
  };
  s.inputs.push_back(access_of(a, with({i, k})));
  s.inputs.push_back(access_of(b, with({k, j})));
  s.output = access_of(n, with({i, j}));
  // One multiply, one add; a complex pair is four real multiplies and four adds (cgemm's count).
  s.flops_per_point = is_complex(n.dtype) ? 8 : 2;
  return s;
}

// Right-aligned broadcast: an input dim of size 1 facing a larger one reads coordinate 0.
Signature expand_sig(const Node& n) {
  Signature s = over_output(n, 0);
  const Node& x = *n.inputs[0];
  const int r = static_cast<int>(n.shape.size()), xr = static_cast<int>(x.shape.size());
  Projection p(xr, r);
  for (int t = 0; t < xr; ++t) {
    const int j = t + (r - xr);
    if (x.shape[t] == n.shape[j]) p.A[t][j] = 1;
    else internal_check(x.shape[t] == 1);
  }
  s.inputs.push_back(access_of(x, std::move(p)));
  return s;
}

// Output dim i is input dim perm[i]: input dim perm[i] follows index dim i.
Signature permute_sig(const Node& n) {
  Signature s = over_output(n, 0);
  const int r = static_cast<int>(n.shape.size());
  const std::vector<int> perm = attrs_of<PermuteAttrs>(n).perm;
  Projection p(r, r);
  for (int i = 0; i < r; ++i) p.A[perm[i]][i] = 1;
  s.inputs.push_back(access_of(*n.inputs[0], std::move(p)));
  return s;
}

// x[start + step * y]: A = diag(step), b = start.
Signature slice_sig(const Node& n) {
  Signature s = over_output(n, 0);
  const int r = static_cast<int>(n.shape.size());
  const SliceAttrs a = attrs_of<SliceAttrs>(n);
  internal_check(static_cast<int>(a.starts.size()) == r);
  Projection p(r, r);
  for (int t = 0; t < r; ++t) {
    p.A[t][t] = a.steps[t];
    p.b[t] = a.starts[t];
  }
  s.inputs.push_back(access_of(*n.inputs[0], std::move(p)));
  return s;
}

// Input i covers output rows [offset_i, offset_i + size_i) along the cat dim: its
// projection is shifted by -offset_i and clipped, so a block reads none, part or all of it.
Signature cat_sig(const Node& n) {
  Signature s = over_output(n, 0);
  const int r = static_cast<int>(n.shape.size());
  const int dim = attrs_of<CatAttrs>(n).dim;
  int64_t offset = 0;
  for (const NodeRef& in : n.inputs) {
    Projection p = Projection::identity(r);
    p.b[dim] = -offset;
    p.clip = true;
    s.inputs.push_back(access_of(*in, std::move(p)));
    offset += in->shape[dim];
  }
  internal_check(offset == n.shape[dim]);
  return s;
}

// A region write: every output point reads the base; points inside the box also read
// the value, shifted by -start and clipped (a block outside the box needs none of it).
Signature write_region_sig(const Node& n) {
  Signature s = over_output(n, 0);
  const int r = static_cast<int>(n.shape.size());
  s.inputs.push_back(access_of(*n.inputs[0], Projection::identity(r)));
  const std::vector<int64_t> start = attrs_of<WriteAttrs>(n).start;
  Projection p = Projection::identity(r);
  for (int d = 0; d < r; ++d) p.b[d] = -start[d];
  p.clip = true;
  s.inputs.push_back(access_of(*n.inputs[1], std::move(p)));
  return s;
}

// Row-major reshape, group by group (reshape.hpp). Size-1 dims read coordinate 0.
Signature reshape_sig(const Node& n) {
  const Node& x = *n.inputs[0];
  Signature s;
  s.flops_per_point = 0;
  Projection in(static_cast<int>(x.shape.size()), 0), out(static_cast<int>(n.shape.size()), 0);
  // Rows are filled as index dims are added; widen every row when a dim is appended.
  auto add_dim = [&](IndexDim d) {
    s.space.push_back(std::move(d));
    for (Projection* p : {&in, &out}) {
      ++p->space_rank;
      for (auto& row : p->A) row.push_back(0);
    }
    return s.rank() - 1;
  };
  // A tensor dim made of factors [first, last]: row-major strides over their index dims.
  auto set_row = [&](Projection& p, int t, std::pair<int, int> run, int base,
                     const std::vector<int64_t>& factors) {
    int64_t stride = 1;
    for (int f = run.second; f >= run.first; --f) {
      p.A[t][base + f] = stride;
      stride *= factors[f];
    }
  };
  for (const ReshapeGroup& g : reshape_groups(x.shape, n.shape)) {
    if (g.factors.empty()) {
      // {2,3} -> {3,2}: no affine map; one unsplittable index dim whose every block reads
      // and writes the whole group (coefficient 0, window = the dim's size).
      int64_t total = 1;
      for (int t : g.in_dims) total *= x.shape[t];
      IndexDim d = parallel(cat_str("d", s.rank() + 1), total);
      d.splittable = false;
      add_dim(std::move(d));
      for (int t : g.in_dims) in.w[t] = x.shape[t];
      for (int t : g.out_dims) out.w[t] = n.shape[t];
      continue;
    }
    // Only a factor that leads its tensor dim on both sides may be split: a block split
    // along an inner factor would touch a strided, non-box set of the flattened dim.
    std::vector<bool> leads_in(g.factors.size(), false), leads_out(g.factors.size(), false);
    for (auto r : g.in_runs) leads_in[r.first] = true;
    for (auto r : g.out_runs) leads_out[r.first] = true;
    const int base = s.rank();
    for (size_t f = 0; f < g.factors.size(); ++f) {
      IndexDim d = parallel(cat_str("d", s.rank() + 1), g.factors[f]);
      d.splittable = leads_in[f] && leads_out[f];
      add_dim(std::move(d));
    }
    for (size_t k = 0; k < g.in_dims.size(); ++k) set_row(in, g.in_dims[k], g.in_runs[k], base, g.factors);
    for (size_t k = 0; k < g.out_dims.size(); ++k)
      set_row(out, g.out_dims[k], g.out_runs[k], base, g.factors);
  }
  s.inputs.push_back(access_of(x, std::move(in)));
  s.output = access_of(n, std::move(out));
  return s;
}

// The window ops: space = the output's dims (plus conv's channel sum); each windowed input dim
// has coefficient = stride, offset = -padding and window = the dilated kernel, so a split of the
// output rows needs a halo of span - stride rows, and padded inputs are clipped.
Projection whole_dims(int space_rank, const Shape& shape) {  // every block reads it all
  Projection p(static_cast<int>(shape.size()), space_rank);
  for (size_t t = 0; t < shape.size(); ++t) p.w[t] = shape[t];
  return p;
}

Signature correlate_sig(const Node& n) {
  const Node& x = *n.inputs[0];
  const Node& k = *n.inputs[1];
  const int r = static_cast<int>(n.shape.size());
  Signature s = over_output(n, 2.0 * static_cast<double>(numel(k.shape)));
  const CorrelateAttrs a = attrs_of<CorrelateAttrs>(n);
  std::vector<WindowDim> dims;
  for (int t = 0; t < r; ++t) dims.push_back(WindowDim{1, 1, k.shape[t], a.pad_before[t], a.pad_after[t]});
  s.inputs.push_back(access_of(x, window_input(dims)));
  s.inputs.push_back(access_of(k, whole_dims(r, k.shape)));
  return s;
}

// Space {n, o, oh, ow} and, without groups, the channel sum c: x <- (n, c, window, window),
// w <- (o, c, whole, whole). With groups an output channel reads its group's input channels,
// which is not affine in o: x's channels are read whole and c is not an index dim.
Signature conv2d_sig(const Node& n) {
  const Node& x = *n.inputs[0];
  const Node& w = *n.inputs[1];
  const Conv2dAttrs a = attrs_of<Conv2dAttrs>(n);
  const bool grouped = a.groups > 1;
  Signature s;
  s.space = {parallel("n", n.shape[0]), parallel("o", n.shape[1]), parallel("oh", n.shape[2]),
             parallel("ow", n.shape[3])};
  if (!grouped) s.space.push_back(reduction("c", x.shape[1], CombineKind::Sum));
  const int sr = s.rank();
  auto spatial = [&](int i) {
    return WindowDim{a.stride[i], a.dilation[i], w.shape[2 + i], a.padding[i], a.padding[i]};
  };
  Projection px = window_input({WindowDim{1, 1, 1, 0, 0}, WindowDim{1, 1, 1, 0, 0}, spatial(0), spatial(1)});
  // window_input maps tensor dim t to index dim t; re-aim the channel row at c (or at nothing).
  for (auto& row : px.A) row.resize(sr, 0);
  px.space_rank = sr;
  px.A[1][1] = 0;
  if (grouped) px.w[1] = x.shape[1];
  else px.A[1][4] = 1;
  Projection pw = whole_dims(sr, w.shape);
  pw.A[0][1] = 1;
  pw.w[0] = 1;
  if (!grouped) {
    pw.A[1][4] = 1;
    pw.w[1] = 1;
  }
  s.inputs.push_back(access_of(x, std::move(px)));
  s.inputs.push_back(access_of(w, std::move(pw)));
  s.output = access_of(n, Projection::select(sr, {0, 1, 2, 3}));
  const double taps = static_cast<double>(w.shape[2] * w.shape[3]);
  s.flops_per_point = 2 * taps * (grouped ? static_cast<double>(w.shape[1]) : 1);
  return s;
}

Signature pool2d_sig(const Node& n) {
  const auto [kernel, stride, pad] = attrs_of<PoolAttrs>(n);
  Signature s = over_output(n, static_cast<double>(kernel[0] * kernel[1]));
  s.inputs.push_back(
      access_of(*n.inputs[0], window_input({WindowDim{1, 1, 1, 0, 0}, WindowDim{1, 1, 1, 0, 0},
                                            WindowDim{stride[0], 1, kernel[0], pad[0], pad[0]},
                                            WindowDim{stride[1], 1, kernel[1], pad[1], pad[1]}})));
  return s;
}

}  // namespace

Signature signature_of(const Node& n) {
  switch (n.op) {
    case Op::Source:  // data already lying somewhere: a generator with nothing to compute
      return over_output(n, 0);
    case Op::Full: return over_output(n, 0);
    case Op::Arange:
    case Op::Linspace:
    case Op::Eye: return over_output(n, 1);
    case Op::Rand: return over_output(n, 8);
    case Op::Randn: return over_output(n, 16);
    case Op::Load: return over_output(n, 1);  // read where it is read, as rand is generated
    case Op::Declare: return map_sig(n, 0);   // an identity that carries properties
    case Op::CheckDeclared: {                 // reads the tensor whole: one block on one rank
      Signature s = map_sig(n, 2);
      for (IndexDim& d : s.space) d.splittable = false;
      return s;
    }
    case Op::Constrain:  // an identity whose layout the search fixes (SearchOptions::output_grid)
    case Op::Cast:
    case Op::Neg:
    case Op::Abs:
    case Op::Exp:
    case Op::Log:
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Sigmoid:
    case Op::Relu:
    case Op::Gelu:
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Sign:
    case Op::Square:
    case Op::Reciprocal:
    case Op::LogicalNot:
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::FloorDiv:
    case Op::Mod:
    case Op::Pow:
    case Op::Maximum:
    case Op::Minimum:
    case Op::Atan2:
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::LogicalAnd:
    case Op::LogicalOr:
    case Op::Real:
    case Op::Imag:
    case Op::Conj:
    case Op::Angle:
    case Op::Complex:
    case Op::Where: return map_sig(n, map_flops(n.op));
    case Op::Sum:
    case Op::Prod:
    case Op::Max:
    case Op::Min:
    case Op::All:
    case Op::Any: return reduce_sig(n, attrs_of<ReduceAttrs>(n).dims, reduce_combine(n.op));
    case Op::ArgMax: return argreduce_sig(n, CombineKind::ArgMax);
    case Op::ArgMin: return argreduce_sig(n, CombineKind::ArgMin);
    case Op::Matmul: return matmul_sig(n);
    case Op::Gather:
    case Op::Scatter:
    case Op::ScatterAdd: return index_sig(n);
    case Op::Nonzero: return nonzero_sig(n);
    case Op::Solve:
    case Op::Cholesky:
    case Op::Det:
    case Op::Slogdet:
    case Op::Qr:
    case Op::Svd:
    case Op::Eigh: return linalg_sig(n);
    case Op::Cumsum:
    case Op::Cumprod:
    case Op::Cummax:
    case Op::Cummin:
    case Op::Logcumsumexp:
    case Op::Sort:
    case Op::LineScatterAdd:
    case Op::Fft:
    case Op::Searchsorted: return line_sig(n);
    case Op::Correlate: return correlate_sig(n);
    case Op::Conv2d: return conv2d_sig(n);
    case Op::MaxPool2d:
    case Op::AvgPool2d: return pool2d_sig(n);
    case Op::Reshape: return reshape_sig(n);
    case Op::Permute: return permute_sig(n);
    case Op::Expand: return expand_sig(n);
    case Op::Slice: return slice_sig(n);
    case Op::Cat: return cat_sig(n);
    case Op::WriteRegion: return write_region_sig(n);
    case Op::FusedMap: return map_sig(n, program_flops(decode_fused_map(n)));
    case Op::FusedReduce: return fused_reduce_sig(n);
    case Op::Count: break;
  }
  internal_check(false && "signature_of: not an op");
  return {};
}

}  // namespace tapestry::poly
