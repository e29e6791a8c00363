// Building a fuzz program's steps with the graph builders (tests/fuzz/program.hpp): the same
// nodes a user's tp calls make, so the evaluators see what scripts give them.
#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/einsum.hpp"
#include "engine/ir/build/packed.hpp"
#include "engine/ir/build/sample_sort.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "tests/fuzz/program.hpp"

namespace tapestry::fuzz {

using build::Operand;

namespace {
std::vector<int> dims_of(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

bool declarations = true;

// Declare with s.n = 1: x zeroed outside the tiles s.b marks (s.a: tile extents), declared
// block-sparse in them and kept as a named tensor keeps it (docs/properties.md).
NodeRef block_sparse(const Step& s, const NodeRef& x) {
  const Shape& xs = x->shape;
  user_check(s.a.size() == xs.size(), "rank changed after a shrink");
  Shape grid;
  for (size_t d = 0; d < xs.size(); ++d) {
    user_check(s.a[d] >= 1 && s.a[d] <= xs[d], "tiles do not fit after a shrink");
    grid.push_back((xs[d] + s.a[d] - 1) / s.a[d]);
  }
  user_check(static_cast<int64_t>(s.b.size()) == numel(grid), "grid changed after a shrink");
  auto m = Value::alloc(DType::Bool, xs);
  std::vector<int64_t> idx(xs.size(), 0);
  for (int64_t e = 0; e < numel(xs); ++e) {
    int64_t t = 0;
    for (size_t d = 0; d < xs.size(); ++d) t = t * grid[d] + idx[d] / s.a[d];
    m->data<bool>()[e] = s.b[static_cast<size_t>(t)] != 0;
    for (int d = static_cast<int>(xs.size()) - 1; d >= 0 && ++idx[d] == xs[d]; --d) idx[d] = 0;
  }
  const NodeRef y = build::where(make_source(m, xs, DType::Bool), x, build::full(xs, 0, x->dtype));
  if (!declarations) return y;
  std::vector<bool> nonzero;
  for (int64_t b : s.b) nonzero.push_back(b != 0);
  return build::read_form(build::stored_form(build::declare(y, PropertiesAttrs{{}, s.a, nonzero, {}}, true)),
                          {});
}

// x + conj(x^T) in dims d1, d2, drawn as users write it: where the two imaginary parts are
// equal it is +0 on both sides, and its packed form's mirrored tiles keep that +0 (re + i (0 -
// im), not conj's -0), which log, sqrt and pow on the negative real axis see (a branch cut).
NodeRef hermitian(const NodeRef& x, int d1, int d2) {
  return build::binary(Op::Add, x, build::unary(Op::Conj, build::transpose(x, d1, d2)));
}
}  // namespace

void set_declarations(bool on) { declarations = on; }

bool has_declare(const Program& p) {
  for (const Step& s : p.steps)
    if (s.kind == Kind::Declare) return true;
  return false;
}

double source_value(int64_t i, int64_t seed, DType dt) {
  const int64_t k = (i * 37 + seed * 11 + (i * i) % 7) % 17 - 8;
  if (dt == DType::Bool) return k > 0;
  if (dt == DType::U8) return static_cast<double>(k + 8);  // 0..16
  if (is_int(dt)) return static_cast<double>(k);
  return static_cast<double>(k) / 4;  // exact in f16 and bf16; complex: the real part
}

NodeRef build_step(const Step& s, const std::vector<NodeRef>& in) {
  switch (s.kind) {
    case Kind::Src: {
      auto v = Value::alloc(s.dt, s.a);
      dispatch_any_dtype(s.dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (int64_t i = 0; i < numel(s.a); ++i) {
          const double x = source_value(i, s.n, s.dt);
          if constexpr (is_cx<T>) v->template data<T>()[i] = T(static_cast<decltype(T{}.re)>(x));
          else v->template data<T>()[i] = static_cast<T>(x);
        }
      });
      return make_source(v, s.a, s.dt);
    }
    case Kind::Full:
      return is_float(s.dt) ? build::full(s.a, s.v, s.dt)
                            : build::full_int(s.a, static_cast<int64_t>(s.v), s.dt);
    case Kind::Arange: return build::arange(s.a[0], s.a[1], s.a[2], s.dt);
    case Kind::Rand: return s.flag ? build::randn(s.a, s.n, s.dt) : build::rand(s.a, s.n, s.dt);
    case Kind::Eye: return build::eye(s.a[0], s.a[1], s.dt);
    case Kind::Unary: return build::unary(s.op, in[0]);
    case Kind::Binary: return build::binary(s.op, in[0], in[1]);
    case Kind::BinaryScalar: return build::binary(s.op, in[0], Operand::number(s.v));
    case Kind::Where: return build::where(in[0], in[1], in[2]);
    case Kind::Cast: return build::cast(in[0], s.dt);
    case Kind::Reduce: return build::reduce(s.op, in[0], dims_of(s.a), s.flag);
    case Kind::Mean: return build::mean(in[0], dims_of(s.a), s.flag);
    case Kind::ArgReduce:
      return build::argreduce(s.op, in[0], s.n < 0 ? std::nullopt : std::optional<int>(static_cast<int>(s.n)),
                              s.flag);
    case Kind::Matmul: return build::matmul(in[0], in[1]);
    case Kind::Einsum: return build::einsum(s.spec, in);
    case Kind::Reshape: return build::reshape(in[0], s.a);
    case Kind::Permute: return build::permute(in[0], dims_of(s.a));
    case Kind::Expand: return build::expand(in[0], s.a);
    case Kind::Slice: return build::slice(in[0], s.a, s.b, s.c);
    case Kind::Narrow: return build::narrow(in[0], static_cast<int>(s.n), s.a[0], s.a[1]);
    case Kind::Select: return build::select(in[0], static_cast<int>(s.n), s.a[0]);
    case Kind::Cat: return build::cat(in, static_cast<int>(s.n));
    case Kind::Pad: return build::pad(in[0], s.a, s.b, static_cast<build::PadMode>(s.n), s.v);
    case Kind::Roll:
      return build::roll(in[0], static_cast<int64_t>(s.v),
                         s.n < 0 ? std::nullopt : std::optional<int>(static_cast<int>(s.n)));
    case Kind::Stencil: return build::stencil(in[0], in[1], static_cast<build::Boundary>(s.n));
    case Kind::Index: {
      auto v = Value::alloc(DType::I64, s.a);
      for (size_t i = 0; i < s.b.size(); ++i) v->data<int64_t>()[i] = s.b[i];
      const NodeRef index = make_source(v, s.a, DType::I64);
      if (s.op == Op::Gather) return build::gather(in[0], static_cast<int>(s.n), index);
      return build::scatter(s.op, in[0], static_cast<int>(s.n), index, in[1],
                            s.op == Op::Scatter ? IndexFn::Scatter : IndexFn::ScatterAdd);
    }
    case Kind::Conv2d: {
      build::Conv2dOptions o;
      o.stride[0] = s.c[0], o.stride[1] = s.c[1], o.padding[0] = s.c[2], o.padding[1] = s.c[3];
      o.dilation[0] = s.c[4], o.dilation[1] = s.c[5], o.groups = s.c[6];
      return build::conv2d(in[0], in[1], o);
    }
    case Kind::Pool: {
      const int64_t k[2] = {s.c[0], s.c[1]}, st[2] = {s.c[2], s.c[3]}, p[2] = {s.c[4], s.c[5]};
      return build::pool2d(s.op, in[0], k, st, p);
    }
    case Kind::Constrain: return build::constrain(in[0], s.a, s.flag);
    case Kind::Declare: {
      if (s.n == 1) return block_sparse(s, in[0]);
      const int d1 = static_cast<int>(s.a[0]), d2 = static_cast<int>(s.a[1]);
      user_check(d2 < static_cast<int>(in[0]->shape.size()), "dims out of range after a shrink");
      if (s.n == 2) {  // Hermitian: packed with each mirrored tile the stored one conjugated
        user_check(is_complex(in[0]->dtype), "not complex after a shrink");
        const NodeRef y = hermitian(in[0], d1, d2);
        if (!declarations) return y;
        return build::read_form(build::stored_form(build::declare(
                                    y, PropertiesAttrs{{{false, {d1, d2}, true}}, {}, {}, {}}, true)),
                                {});
      }
      const NodeRef y = build::binary(s.flag ? Op::Sub : Op::Add, in[0], build::transpose(in[0], d1, d2));
      if (!declarations) return y;
      return build::read_form(
          build::stored_form(build::declare(y, PropertiesAttrs{{{s.flag, {d1, d2}}}, {}, {}, {}}, true)), {});
    }
    case Kind::Line: {
      const int dim = static_cast<int>(s.n);
      user_check(dim < static_cast<int>(in[0]->shape.size()), "dim out of range after a shrink");
      if (s.op == Op::Sort && s.a.size() == 3 && in[0]->shape[dim] >= 1)
        return build::topk_chunked(in[0], std::min(s.a[1], in[0]->shape[dim]), dim, s.a[0] != 0,
                                   s.a[2])[s.flag ? 1 : 0];
      if (s.op == Op::Sort) return build::sort(in[0], dim, s.a[0] != 0)[s.flag ? 1 : 0];
      if (s.op == Op::Fft && s.a[0] == 2)  // rfft of a real input; flag: ortho
        return build::rfft(in[0], dim, std::nullopt,
                           s.flag ? build::FftNorm::Ortho : build::FftNorm::Backward);
      if (s.op == Op::Fft && s.a[0] == 3)  // irfft (default length 2(m-1)); flag: ortho
        return build::irfft(in[0], dim, std::nullopt,
                            s.flag ? build::FftNorm::Ortho : build::FftNorm::Backward);
      if (s.op == Op::Fft)  // a[0]: inverse; flag: ortho
        return build::fft(in[0], dim, std::nullopt, s.flag ? build::FftNorm::Ortho : build::FftNorm::Backward,
                          s.a[0] != 0);
      if (s.op == Op::Cummax || s.op == Op::Cummin)
        return build::scan_extreme(s.op, in[0], dim)[s.flag ? 1 : 0];
      return build::scan(s.op, in[0], dim);
    }
    case Kind::WriteRegion:
      return build::write_region(in[0], s.a, s.b, s.flag ? Operand::number(s.v) : Operand(in[1]));
  }
  throw InternalError("fuzz: unknown step kind");
}

std::vector<NodeRef> build(const Program& p) {
  std::vector<NodeRef> nodes;
  for (const Step& s : p.steps) {
    std::vector<NodeRef> ins;
    for (int i : s.in) {
      if (i < 0 || i >= static_cast<int>(nodes.size())) throw Error("fuzz: step refers forward");
      ins.push_back(nodes[i]);
    }
    nodes.push_back(build_step(s, ins));
    if (numel(nodes.back()->shape) > 4000) throw Error("fuzz: step too large");
  }
  return nodes;
}

}  // namespace tapestry::fuzz
