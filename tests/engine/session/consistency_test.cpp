// The consistency harness: every op of the registry, sharded over meshes of 1..8 virtual ranks
// by several plans (greedy, annealed with different seeds, random placements), must give what
// the single-rank evaluator gives: exactly for maps and data movement, to 1e-5 relative for
// float reductions. An op with no case fails the registry check (Source is every case's input).
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "engine/device/sim_backend.hpp"
#include "engine/io/lazy_load.hpp"
#include "engine/io/npy.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/cost.hpp"
#include "engine/plan/fuse.hpp"
#include "engine/plan/planner.hpp"
#include "engine/plan/search.hpp"
#include "engine/plan/verifier.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/session/run_sharded.hpp"
#include "engine/shard/rank_program.hpp"

using namespace tapestry;
using build::Operand;

namespace {

// --- inputs ------------------------------------------------------------------------------

// A source of deterministic values in [-2, 2] (quarters, so sums of few are exact), per seed.
NodeRef source(const Shape& s, int seed, DType t = DType::F32) {
  auto v = Value::alloc(t, s);
  dispatch_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < numel(s); ++i) {
      const int64_t k = (i * 37 + seed * 11 + (i * i) % 7) % 17 - 8;
      if constexpr (std::is_same_v<T, bool>) v->template data<T>()[i] = k > 0;
      else if constexpr (std::is_integral_v<T>) v->template data<T>()[i] = static_cast<T>(k);
      else v->template data<T>()[i] = static_cast<T>(k) / 4;
    }
  });
  return make_source(v, s, t);
}

NodeRef x117(int seed = 1) { return source({11, 7}, seed); }

// A lazy load (Op::Load) of source({11, 7}, seed) saved as .npy once per process.
NodeRef loaded(int seed) {
  struct File {
    std::string path = (std::filesystem::temp_directory_path() /
                        ("tapestry_consistency_" + std::to_string(::getpid()) + ".npy"))
                           .string();
    explicit File(int seed) { io::save_npy(path, source({11, 7}, seed)->value->view()); }
    ~File() { std::filesystem::remove(path); }
  };
  static const File f(seed);
  return io::lazy_raw(f.path, io::read_npy_header(f.path));
}

// --- the cases ---------------------------------------------------------------------------

struct Case {
  std::string name;
  std::vector<NodeRef> reference;  // the graph the evaluator runs
  std::vector<NodeRef> sharded;    // what the planner runs (a fused rewrite, else the same)
  double tol = 0;                  // relative; 0 = exact
};

Case exact(std::string name, std::vector<NodeRef> roots) { return {std::move(name), roots, roots, 0}; }
Case approx(std::string name, std::vector<NodeRef> roots) { return {std::move(name), roots, roots, 1e-5}; }

NodeRef un(Op op, const NodeRef& x) { return build::unary(op, x); }
NodeRef bin(Op op, const Operand& a, const Operand& b) { return build::binary(op, a, b); }

std::vector<Case> cases() {
  std::vector<Case> c;
  const NodeRef x = x117(1), y = x117(2);
  const NodeRef pos = bin(Op::Add, un(Op::Abs, x), Operand::number(0.5));  // > 0: log, sqrt, pow
  const NodeRef xi = source({11, 7}, 3, DType::I32), yi = source({11, 7}, 4, DType::I32);
  const NodeRef xb = source({11, 7}, 5, DType::Bool), yb = source({11, 7}, 6, DType::Bool);
  // Generators: every shard computes its box from the global index.
  c.push_back(exact("full", {build::full({11, 7}, 2.5, DType::F32)}));
  c.push_back(exact("arange", {build::arange(0, 10, 1, DType::F32)}));
  c.push_back(exact("linspace", {build::linspace(-1, 1, 11, DType::F32)}));
  c.push_back(exact("eye", {build::eye(11, 7, DType::F32)}));
  c.push_back(exact("rand", {build::rand({11, 7}, 42, DType::F32)}));
  c.push_back(exact("randn", {build::randn({7, 11}, 43, DType::F64)}));
  // A file's boxes, read by every rank that needs them (a slice is a smaller box of the file).
  c.push_back(exact(
      "load", {loaded(7), build::slice(loaded(7), {2, 1}, {1, 2}, {5, 3}), bin(Op::Add, loaded(7), x)}));
  // Maps: one op at the top, over sources.
  c.push_back(exact("cast", {build::cast(x, DType::I32), build::cast(xi, DType::F64)}));
  for (Op op : {Op::Neg, Op::Abs, Op::Exp, Op::Sin, Op::Cos, Op::Tanh, Op::Sigmoid, Op::Relu, Op::Gelu,
                Op::Floor, Op::Ceil, Op::Round, Op::Sign, Op::Square, Op::Reciprocal})
    c.push_back(exact(std::string(op_def(op).name), {un(op, x)}));
  for (Op op : {Op::Log, Op::Sqrt, Op::Rsqrt})
    c.push_back(exact(std::string(op_def(op).name), {un(op, pos)}));
  c.push_back(exact("logical_not", {un(Op::LogicalNot, xb)}));
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Maximum, Op::Minimum, Op::Atan2, Op::Eq, Op::Ne,
                Op::Lt, Op::Le, Op::Gt, Op::Ge})
    c.push_back(exact(std::string(op_def(op).name), {bin(op, x, y)}));
  c.push_back(exact("pow", {bin(Op::Pow, pos, y)}));
  c.push_back(exact("floordiv", {bin(Op::FloorDiv, xi, yi), bin(Op::FloorDiv, x, y)}));
  c.push_back(exact("mod", {bin(Op::Mod, xi, yi)}));
  c.push_back(exact("logical_and", {bin(Op::LogicalAnd, xb, yb)}));
  c.push_back(exact("logical_or", {bin(Op::LogicalOr, xb, yb)}));
  c.push_back(exact("where", {build::where(xb, x, y)}));
  c.push_back(exact("broadcast scalar", {bin(Op::Mul, x, Operand::number(3))}));
  // Reductions: a split reduction dim leaves partials that a combine merges.
  c.push_back(approx("sum", {build::reduce(Op::Sum, x, {0}, false), build::reduce(Op::Sum, x, {1}, true),
                             build::reduce(Op::Sum, x, {}, false), build::reduce(Op::Sum, xi, {0}, false)}));
  const NodeRef near1 = bin(Op::Add, bin(Op::Div, x, Operand::number(16)), Operand::number(1));
  c.push_back(
      approx("prod", {build::reduce(Op::Prod, near1, {0}, false), build::reduce(Op::Prod, xi, {1}, false)}));
  c.push_back(exact("max", {build::reduce(Op::Max, x, {0}, false), build::reduce(Op::Max, xi, {}, false)}));
  c.push_back(exact("min", {build::reduce(Op::Min, x, {1}, false)}));
  c.push_back(exact("all", {build::reduce(Op::All, xb, {0}, false), build::reduce(Op::All, xb, {}, false)}));
  c.push_back(exact("any", {build::reduce(Op::Any, xb, {1}, false)}));
  c.push_back(approx("mean var", {build::mean(x, {0}, false), build::var(x, {1}, 1, false)}));
  c.push_back(exact("argmax",
                    {build::argreduce(Op::ArgMax, x, 1, false), build::argreduce(Op::ArgMax, x, {}, false)}));
  c.push_back(exact("argmin", {build::argreduce(Op::ArgMin, x, 0, true)}));
  // Contractions.
  c.push_back(approx("matmul", {build::matmul(x, source({7, 5}, 7))}));
  c.push_back(approx("batched matmul", {build::matmul(source({3, 11, 7}, 8), source({3, 7, 5}, 9))}));
  c.push_back(approx("matvec", {build::matmul(x, source({7}, 10))}));
  // Data movement.
  c.push_back(exact("reshape", {build::reshape(x, {77}), build::reshape(source({6, 4}, 11), {4, 3, 2}),
                                build::reshape(source({2, 3, 4}, 12), {3, 8})}));
  c.push_back(
      exact("permute", {build::transpose(x, 0, 1), build::permute(source({3, 4, 5}, 13), {2, 0, 1})}));
  c.push_back(exact("expand", {build::expand(source({1, 7}, 14), {11, 7}),
                               build::expand(source({11, 1}, 15), {2, 11, 7})}));
  c.push_back(exact("slice", {build::narrow(x, 0, 1, 10), build::slice(x, {1, 0}, {3, 2}, {4, 4}),
                              bin(Op::Sub, build::narrow(x, 0, 1, 10), build::narrow(x, 0, 0, 10))}));
  c.push_back(exact("negative steps", {build::flip(x, {0, 1}), build::slice(x, {10, 6}, {-3, -2}, {4, 4}),
                                       build::flip(build::narrow(x, 0, 2, 8), {0})}));
  c.push_back(exact("structure", {build::diagonal(x, 1, 0, 1),
                                  build::diagonal(source({3, 5, 4}, 19), -1, 2, 1), build::tril(x, -2),
                                  build::triu(source({2, 11, 7}, 20), 1), build::diag(source({6}, 21), 2)}));
  c.push_back(exact("constrain", {build::constrain(bin(Op::Add, x, y), {1, 1})}));
  {
    // A declared symmetric tensor: checked whole on one rank (check_declared), or trusted.
    const NodeRef sq = source({2, 6, 6}, 62);
    const NodeRef sym = bin(Op::Add, sq, build::transpose(sq, 1, 2));
    const NodeRef m = bin(Op::Mul, sq, Operand::number(2));
    const PropertiesAttrs p{{{false, {1, 2}}}, {}, {}, {}};
    c.push_back(
        exact("declare", {build::declare(m, p, true),
                          bin(Op::Mul, build::declare(build::dense(sym), p, false), Operand::number(3))}));
  }
  c.push_back(
      exact("cat", {build::cat({x, source({5, 7}, 16), y}, 0), build::cat({x, source({11, 2}, 17)}, 1)}));
  c.push_back(exact("write_region", {build::write_region(x, {2, 1}, {4, 3}, Operand(source({4, 3}, 18))),
                                     build::write_region(x, {0, 5}, {11, 2}, Operand::number(7))}));
  // Windows: halos and padded borders fall out of the projections (stride = coefficient,
  // kernel = window); pad and roll are slices and cats.
  c.push_back(exact("pad roll", {build::pad(x, {1, 0}, {2, 3}, build::PadMode::Constant, 1.5),
                                 build::pad(x, {2, 1}, {1, 2}, build::PadMode::Reflect, 0),
                                 build::pad(xi, {3, 0}, {1, 7}, build::PadMode::Periodic, 0),
                                 build::roll(x, 3, 0), build::roll(x, -9, std::nullopt)}));
  {
    // LAPACK ops read whole matrices; the planner may split only the batch dim of 6.
    const NodeRef s = source({6, 4, 4}, 60, DType::F64), r = source({6, 4, 2}, 61, DType::F64);
    const NodeRef spd = bin(Op::Add, build::matmul(s, build::transpose(s, 1, 2)),
                            build::broadcast_to(build::eye(4, 4, DType::F64), {6, 4, 4}));
    const std::vector<NodeRef> q = build::qr(s, false), u = build::svd(s, 1), w = build::eigh(spd, true);
    c.push_back(approx("linalg", {build::solve(spd, r), build::cholesky(spd), build::det(s),
                                  build::slogdet(s)[1], q[0], q[1], u[0], u[1], u[2], w[0], w[1]}));
  }
  {
    // Line ops read whole lines along their dim (never split); the other dims split freely.
    const NodeRef x3 = source({3, 11, 7}, 63);
    const std::vector<NodeRef> s = build::sort(x, 1, false), sd = build::sort(x3, 1, true);
    const std::vector<NodeRef> cm = build::scan_extreme(Op::Cummax, x, 0);
    const std::vector<NodeRef> cn = build::scan_extreme(Op::Cummin, xi, 1);
    const std::vector<NodeRef> k = build::topk(x3, 3, 2, true);
    const NodeRef seq = build::sort(source({9}, 64), 0, false)[0];
    c.push_back(exact("sort scan", {s[0], s[1], sd[0], sd[1], cm[0], cm[1], cn[0], cn[1], k[0], k[1],
                                    build::scan(Op::Cumsum, x, 0), build::scan(Op::Cumsum, xi, 1, true),
                                    build::line_scatter_add(x, s[1], 1), build::searchsorted(seq, x, false),
                                    build::searchsorted(seq, x3, true)}));
    // Complex numbers (compared through real roots) and the FFT, a line op whose dim is read whole.
    const NodeRef zc = build::make_complex(x, build::unary(Op::Sin, x));
    const auto part = [](Op op, const NodeRef& n) { return build::unary(op, n); };
    c.push_back(approx(
        "complex fft",
        {part(Op::Real, build::binary(Op::Mul, zc, zc)), part(Op::Imag, part(Op::Conj, zc)),
         part(Op::Angle, zc), part(Op::Real, build::fft(zc, 1, std::nullopt, build::FftNorm::Ortho, false)),
         part(Op::Imag, build::fft(x3, 0, std::nullopt, build::FftNorm::Backward, true)),
         // rfft is the op on real input (r2c: n values in, n/2+1 out), along each dim of x3.
         part(Op::Real, build::rfft(x3, 0, std::nullopt, build::FftNorm::Backward)),
         part(Op::Imag, build::rfft(x3, 2, 5, build::FftNorm::Ortho)),
         // irfft is the op with a real output (c2r: n/2+1 values in, n out), both parities of n.
         build::irfft(zc, 1, std::nullopt, build::FftNorm::Backward),
         build::irfft(zc, 0, 7, build::FftNorm::Ortho)}));
    c.push_back(approx("cumprod logcumsumexp",
                       {build::scan(Op::Cumprod, near1, 0), build::scan(Op::Logcumsumexp, x3, 2),
                        build::scan(Op::Logcumsumexp, x, 0, true)}));
    // Gather reads x whole along dim, a scatter keeps dim whole; index values 1-based (some
    // negative). The mask keeps every third element: its count (26 of 77) is known here.
    auto index = [](const Shape& shape, int64_t size, int64_t mul) {
      const NodeRef i = build::arange_int(0, numel(shape) - 1, 1, DType::I64);
      return build::reshape(
          bin(Op::Sub,
              bin(Op::Mod, bin(Op::Mul, i, Operand::integer_number(mul)), Operand::integer_number(2 * size)),
              Operand::integer_number(size)),
          shape);  // values -size..size-1, 0 made 1 below
    };
    auto nonzero_index = [&](const Shape& shape, int64_t size, int64_t mul) {
      const NodeRef i = index(shape, size, mul);
      return build::where(bin(Op::Eq, i, Operand::integer_number(0)), Operand::integer_number(1), i);
    };
    const NodeRef g1 = nonzero_index({11, 5}, 7, 5), g0 = nonzero_index({6, 7}, 11, 3);
    const NodeRef third = bin(Op::Eq,
                              bin(Op::Mod, build::reshape(build::arange_int(0, 76, 1, DType::I64), {11, 7}),
                                  Operand::integer_number(3)),
                              Operand::integer_number(0));
    c.push_back(exact(
        "index",
        {build::gather(x, 1, g1), build::gather(xi, 0, g0),
         build::scatter(Op::Scatter, x, 1, g1, Operand(source({11, 5}, 40)), IndexFn::Scatter),
         build::scatter(Op::ScatterAdd, xi, 0, g0, Operand(source({6, 7}, 41, DType::I32)),
                        IndexFn::ScatterAdd),
         build::index_select(x, 0, nonzero_index({4}, 11, 3)), build::take(x, nonzero_index({3, 4}, 77, 13)),
         build::masked_select(x, third, 26), build::masked_scatter(x, third, source({26}, 42), 26)}));
  }
  c.push_back(
      exact("correlate", {build::stencil(x, source({3, 3}, 23), build::Boundary::Zero),
                          build::stencil(x, source({5, 3}, 24), build::Boundary::Periodic),
                          build::stencil(source({13}, 25), source({5}, 26), build::Boundary::Reflect),
                          build::stencil(xi, source({3, 1}, 27, DType::I32), build::Boundary::Zero)}));
  {
    build::Conv2dOptions strided, grouped;
    strided.stride[0] = 2;
    strided.padding[0] = strided.padding[1] = 1;
    grouped.groups = 2;
    grouped.dilation[0] = 2;
    grouped.padding[1] = 1;
    c.push_back(approx("conv2d", {build::conv2d(source({2, 3, 9, 7}, 28), source({4, 3, 3, 3}, 29), strided),
                                  build::conv2d(source({1, 4, 8, 6}, 30), source({6, 2, 3, 2}, 31), grouped),
                                  build::conv2d(source({2, 2, 5, 5}, 32, DType::I64),
                                                source({3, 2, 2, 2}, 33, DType::I64), strided)}));
  }
  {
    const NodeRef im = source({2, 3, 9, 8}, 34);
    const int64_t k3[2] = {3, 3}, k2[2] = {2, 3}, s1[2] = {1, 1}, s2[2] = {2, 3}, p1[2] = {1, 1},
                  p0[2] = {0, 1};
    c.push_back(
        exact("pool2d",
              {build::pool2d(Op::MaxPool2d, im, k3, s2, p1),
               build::pool2d(Op::MaxPool2d, source({1, 2, 7, 7}, 35, DType::I32), k2, s1, p0),
               build::pool2d(Op::AvgPool2d, im, k3, s1, p1), build::pool2d(Op::AvgPool2d, im, k2, s2, p0)}));
  }
  // A small model: matmul, bias, relu, softmax-like normalisation.
  {
    const NodeRef h = un(Op::Relu, bin(Op::Add, build::matmul(x, source({7, 9}, 19)), source({9}, 20)));
    const NodeRef e = un(Op::Exp, h);
    c.push_back(approx("mlp", {bin(Op::Div, e, build::reduce(Op::Sum, e, {1}, true))}));
  }
  // Fused nodes exist only after fusion: the planner runs the rewrite, the evaluator the original.
  {
    const NodeRef m = un(Op::Tanh, bin(Op::Add, bin(Op::Mul, x, y), Operand::number(1)));
    const NodeRef r = build::reduce(Op::Sum, un(Op::Exp, bin(Op::Sub, x, y)), {1}, false);
    const plan::FusedGraph f = plan::fuse({m, r});
    c.push_back(Case{"fused_map fused_reduce", {m, r}, f.roots, 1e-5});
  }
  return c;
}

// --- comparing -------------------------------------------------------------------------

std::vector<double> values_of(const View& v) {
  std::vector<double> out(static_cast<size_t>(v.numel()));
  dispatch_dtype(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(v.ptr<T>()[i]);
  });
  return out;
}

struct Expected {
  std::vector<std::vector<double>> values;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
};

// The largest magnitude of a root: float reductions are compared relative to it, since a
// sum's cancellation makes a per-element relative error meaningless.
double scale_of(const std::vector<double>& v) {
  double s = 1;
  for (double d : v)
    if (std::isfinite(d)) s = std::max(s, std::abs(d));
  return s;
}

// "" when every root matches, else the first difference.
std::string compare(const Case& c, const Expected& want) {
  for (size_t r = 0; r < c.sharded.size(); ++r) {
    const NodeRef& n = c.sharded[r];
    if (!n->value) return cat_str("root ", r, " has no value");
    const View& v = n->value->view();
    if (!v.is_contiguous() || v.shape != want.shapes[r] || v.dtype != want.dtypes[r])
      return cat_str("root ", r, ": shape ", shape_str(v.shape), " ", dtype_name(v.dtype));
    const std::vector<double> got = values_of(v);
    const double tol = c.tol * scale_of(want.values[r]);
    for (size_t i = 0; i < got.size(); ++i) {
      const double a = got[i], b = want.values[r][i];
      if (std::isnan(a) && std::isnan(b)) continue;
      if (c.tol == 0 ? !(a == b) : !(std::abs(a - b) <= tol))
        return cat_str("root ", r, " element ", i, ": got ", num_str(a), ", want ", num_str(b));
    }
  }
  return "";
}

void forget(const std::vector<NodeRef>& roots) {
  for (const NodeRef& r : roots) set_value(*r, nullptr);
}

Expected reference(const Case& c) {
  evaluate(c.reference);
  Expected e;
  for (const NodeRef& r : c.reference) {
    e.values.push_back(values_of(r->value->view()));
    e.dtypes.push_back(r->dtype);
    e.shapes.push_back(r->shape);
  }
  forget(c.reference);
  return e;
}

plan::SearchOptions options(plan::SearchOptions::Method method, int steps, uint64_t seed) {
  plan::SearchOptions o;
  o.method = method;
  o.steps = steps;
  o.work_budget = 200000;
  o.seed = seed;
  return o;
}

// Where an input lies before the plan: whole on some rank, cut into rows over the ranks,
// or a copy on every rank, so blocks gather their slices from several pieces.
void hold_somewhere(const Node& n, int ranks, std::mt19937_64& rng, std::vector<plan::Shard>& initial) {
  const poly::Box all = poly::Box::of_shape(n.shape);
  const int mode = n.shape.empty() ? 0 : std::uniform_int_distribution<int>(0, 2)(rng);
  if (mode == 0) {
    initial.push_back({n.id, all, std::uniform_int_distribution<int>(0, ranks - 1)(rng)});
  } else if (mode == 1) {
    const int64_t parts = std::min<int64_t>(ranks, n.shape[0]);
    for (int64_t p = 0; p < parts; ++p) {
      poly::Box b = all;
      b.lo[0] = p * n.shape[0] / parts;
      b.hi[0] = (p + 1) * n.shape[0] / parts - 1;
      initial.push_back({n.id, b, static_cast<int>((p + 1) % ranks)});
    }
  } else {
    for (int r = 0; r < ranks; ++r) initial.push_back({n.id, all, r});
  }
}

// A joint choice drawn at random: any candidate of every op, however costly, over inputs
// laid out at random.
plan::Plan random_plan(const std::vector<NodeRef>& roots, const plan::Mesh& m, std::mt19937_64& rng) {
  const std::vector<NodeRef> topo = plan::observed_subgraph(roots);
  std::vector<plan::Shard> initial;
  for (const NodeRef& n : topo)
    if (n->value) hold_somewhere(*n, m.ranks, rng, initial);
  std::vector<plan::Candidate> choice;
  for (const NodeRef& n : plan::ops_to_place(topo, initial, roots)) {
    const auto cands = plan::candidates(poly::signature_of(*n), m.ranks);
    choice.push_back(cands[std::uniform_int_distribution<size_t>(0, cands.size() - 1)(rng)]);
  }
  plan::Plan p = plan::evaluate(topo, initial, roots, m, choice);
  const plan::VerifyResult v = plan::verify(p.graph(), topo);
  if (!v.ok()) throw InternalError(cat_str("random plan fails verification:\n", v.message()));
  return p;
}

}  // namespace

TEST_CASE("engine.session.consistency.every_op_has_a_case") {
  std::set<Op> covered;
  for (const Case& c : cases()) {
    std::vector<NodeRef> all = c.sharded;
    all.insert(all.end(), c.reference.begin(), c.reference.end());
    for (const NodeRef& n : plan::observed_subgraph(all)) covered.insert(n->op);
  }
  for (const OpDef& d : all_ops()) {
    if (d.op == Op::Source) continue;
    CHECK_MESSAGE(covered.count(d.op), "op '", d.name, "' has no consistency case");
  }
}

TEST_CASE("engine.session.consistency.sharded_equals_unsharded") {
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937_64 rng(2024);
  int runs = 0;
  int64_t blocks = 0, messages = 0;
  for (const Case& c : cases()) {
    const Expected want = reference(c);
    for (int ranks = 1; ranks <= 8; ++ranks) {
      const plan::Mesh mesh = ranks % 2 ? plan::Mesh::this_machine(ranks) : plan::Mesh::modelled(ranks);
      std::vector<std::pair<std::string, std::function<RunReport()>>> ways;
      ways.push_back({"greedy", [&] {
                        return run_sharded(c.sharded, mesh, options(plan::SearchOptions::Greedy, 0, 1), true);
                      }});
      for (uint64_t seed : {1, 2})
        ways.push_back({cat_str("anneal seed ", seed), [&, seed] {
                          return run_sharded(c.sharded, mesh, options(plan::SearchOptions::Anneal, 60, seed),
                                             true);
                        }});
      for (int k = 0; k < 3; ++k)
        ways.push_back(
            {cat_str("random ", k), [&] { return run_plan(random_plan(c.sharded, mesh, rng).graph()); }});
      for (auto& [how, run] : ways) {
        INFO("case '", c.name, "' on ", ranks, " ranks, ", how);
        std::string problem;
        try {
          const RunReport r = run();
          blocks += r.blocks;
          messages += r.messages;
          problem = compare(c, want);
        } catch (const std::exception& e) {
          problem = cat_str("threw: ", e.what());
        }
        CHECK_MESSAGE(problem.empty(), problem);
        forget(c.sharded);
        ++runs;
      }
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE(runs, " sharded runs (", blocks, " blocks, ", messages, " messages) in ", s, " s");
  CHECK(messages > runs);  // the plans do move data: the harness is not comparing 1-rank runs
}

TEST_CASE("engine.session.consistency.sharded_on_devices_equals_unsharded") {
  // Every case again with each rank computing on its own simulated device (device memory apart
  // from the host's, the CPU's kernels): blocks run through run_block on the device and slices cross between
  // host and device only through the rank store. Odd ranks refuse the ops at a case's roots, so
  // device blocks, CPU blocks and the copies between them meet in one plan.
  std::mt19937_64 rng(77);
  int runs = 0;
  int64_t on_device = 0, on_cpu = 0;
  for (const Case& c : cases()) {
    const Expected want = reference(c);
    for (int ranks = 1; ranks <= 3; ++ranks) {
      std::vector<std::unique_ptr<SimDevice>> sims;
      std::vector<DeviceBackend*> devices;
      for (int r = 0; r < ranks; ++r) {
        sims.push_back(std::make_unique<SimDevice>());
        if (r % 2)
          for (const NodeRef& root : c.sharded) sims.back()->refuse(root->op);
        devices.push_back(sims.back().get());
      }
      const plan::Mesh mesh = plan::Mesh::modelled(ranks);
      std::vector<std::pair<std::string, std::function<RunReport()>>> ways;
      ways.push_back({"greedy", [&] {
                        return run_sharded(c.sharded, mesh, options(plan::SearchOptions::Greedy, 0, 1), true,
                                           devices);
                      }});
      for (int k = 0; k < 2; ++k)
        ways.push_back({cat_str("random ", k),
                        [&] { return run_plan(random_plan(c.sharded, mesh, rng).graph(), {}, devices); }});
      for (auto& [how, run] : ways) {
        INFO("case '", c.name, "' on ", ranks, " ranks with devices, ", how);
        std::string problem;
        try {
          const RunReport r = run();
          on_device += r.device_blocks;
          on_cpu += r.blocks - r.device_blocks;
          problem = compare(c, want);
        } catch (const std::exception& e) {
          problem = cat_str("threw: ", e.what());
        }
        CHECK_MESSAGE(problem.empty(), problem);
        for (const auto& sim : sims) CHECK(sim->counts().live_bytes == 0);  // nothing outlives the run
        forget(c.sharded);
        ++runs;
      }
    }
  }
  MESSAGE(runs, " sharded runs on simulated devices: ", on_device, " device blocks, ", on_cpu, " CPU blocks");
  CHECK(on_device > 0);
  CHECK(on_cpu > 0);
}

TEST_CASE("engine.session.consistency.stencil_halo") {
  // Rows split over 2 ranks where x already lies split the same way: each block needs only the
  // k-1 rows of halo across the cut (k/2 from each side), which the window projection yields.
  for (int64_t k : {3, 5}) {
    const NodeRef x = source({16, 10}, 40), w = source({k, 3}, 41);
    const NodeRef y = build::stencil(x, w, build::Boundary::Zero);
    const Case c = exact("halo", {y});
    const Expected want = reference(c);
    const std::vector<NodeRef> topo = plan::observed_subgraph({y});
    plan::Assignment a;
    a[y->id] = plan::grid_blocks(poly::signature_of(*y), {2, 1}, 2);
    const plan::ShardedGraph g = plan::lower(topo, a,
                                             {{x->id, poly::Box({0, 0}, {7, 9}), 0},
                                              {x->id, poly::Box({8, 0}, {15, 9}), 1},
                                              {w->id, poly::Box::of_shape(w->shape), 0},
                                              {w->id, poly::Box::of_shape(w->shape), 1}},
                                             {y}, 2);
    REQUIRE_MESSAGE(plan::verify(g, topo).ok(), plan::verify(g, topo).message());
    int64_t rows = 0;
    for (const plan::Transfer& t : g.transfers) {
      CHECK(t.tensor == x->id);
      CHECK(t.slice.extent(1) == 10);
      rows += t.slice.extent(0);
    }
    CHECK(rows == k - 1);
    CHECK(plan::cost_of(g, plan::Mesh::modelled(2)).bytes_moved == (k - 1) * 10 * 4);
    run_plan(g);
    CHECK(compare(c, want) == "");
    forget({y});
  }
}

TEST_CASE("engine.session.consistency.eleven_rows_over_three_ranks") {
  // grid_blocks cuts 11 rows into 3, 4, 4: uneven blocks meet uneven held shards.
  const NodeRef x = x117(21), w = source({7, 4}, 22);
  const NodeRef y = build::reduce(Op::Sum, un(Op::Tanh, build::matmul(x, w)), {0}, false);
  const Case c = approx("rows", {y});
  const Expected want = reference(c);
  std::vector<NodeRef> topo = plan::observed_subgraph({y});
  plan::Assignment a;
  for (const NodeRef& n : topo)
    if (!n->value)
      a[n->id] = plan::grid_blocks(poly::signature_of(*n),
                                   std::vector<int64_t>(poly::signature_of(*n).rank(), 1), 3);
  a[y->inputs[0]->id] = plan::grid_blocks(poly::signature_of(*y->inputs[0]), {3, 1}, 3);
  a[y->inputs[0]->inputs[0]->id] =
      plan::grid_blocks(poly::signature_of(*y->inputs[0]->inputs[0]), {3, 1, 1}, 3);
  a[y->id] = plan::grid_blocks(poly::signature_of(*y), {3, 1}, 3);  // rows are y's reduction dim
  const plan::ShardedGraph g = plan::lower(topo, a,
                                           {{x->id, poly::Box({0, 0}, {3, 6}), 0},
                                            {x->id, poly::Box({4, 0}, {7, 6}), 1},
                                            {x->id, poly::Box({8, 0}, {10, 6}), 2},
                                            {w->id, poly::Box::of_shape(w->shape), 1}},
                                           {y}, 3);
  REQUIRE_MESSAGE(plan::verify(g, topo).ok(), plan::verify(g, topo).message());
  CHECK(g.combines.size() == 1);
  run_plan(g);
  CHECK(compare(c, want) == "");
  forget({y});
}
