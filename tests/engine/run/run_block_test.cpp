// run_block against the whole: every op kind, cut into random uneven blocks, each run from the
// input slices its signature names, partials combined, equals evaluate() on the whole node.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/fuse.hpp"
#include "engine/poly/signature.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/run/run_block.hpp"
#include "kernels/cpu/kernels.hpp"

using namespace tapestry;
using build::Operand;
using poly::Box;

namespace {

// Floats uniform in [lo, hi), integers in [-9, 9], bools fair.
NodeRef random_source(const Shape& s, DType t, std::mt19937& g, double lo = -2, double hi = 2) {
  auto v = Value::alloc(t, s);
  dispatch_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = v->data<T>();
    for (int64_t i = 0; i < numel(s); ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = std::bernoulli_distribution(0.5)(g);
      else if constexpr (std::is_integral_v<T>)
        p[i] = static_cast<T>(std::uniform_int_distribution<int>(-9, 9)(g));
      else p[i] = static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(g));
    }
  });
  return make_source(v, s, t);
}

std::vector<int64_t> ones(size_t r) { return std::vector<int64_t>(r, 1); }

View slice_of(const View& whole, const Box& b) {
  if (b.empty()) return View{};
  return whole.sliced(b.lo, ones(b.lo.size()), b.extents());
}

std::shared_ptr<Value> contiguous(const View& v) {
  auto out = Value::alloc(v.dtype, v.shape);
  cpu::copy_view(v, out->v);
  return out;
}

// Equal elementwise: bit for bit (NaN equals NaN) when rtol == 0, else within rtol * (1 + |want|).
bool same_values(const View& got, const View& want, double rtol) {
  if (got.shape != want.shape || got.dtype != want.dtype) return false;
  auto a = contiguous(got), b = contiguous(want);
  // A complex tensor compares as its interleaved real and imaginary parts.
  const int64_t n = is_complex(got.dtype) ? 2 * got.numel() : got.numel();
  return dispatch_dtype(real_dtype(got.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = reinterpret_cast<const T*>(a->view().byte_ptr());
    const T* y = reinterpret_cast<const T*>(b->view().byte_ptr());
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x[i]) && std::isnan(y[i])) continue;
        if (rtol == 0 ? std::memcmp(&x[i], &y[i], sizeof(T)) != 0
                      : !(std::abs(double(x[i]) - double(y[i])) <= rtol * (1 + std::abs(double(y[i])))) &&
                            x[i] != y[i]) {
          MESSAGE("element ", i, ": got ", double(x[i]), ", want ", double(y[i]));
          return false;
        }
      } else if (x[i] != y[i]) {
        MESSAGE("element ", i, ": got ", int64_t(x[i]), ", want ", int64_t(y[i]));
        return false;
      }
    }
    return true;
  });
}

// `parts` uneven pieces of [0, extent), as inclusive ranges.
std::vector<std::pair<int64_t, int64_t>> random_cuts(int64_t extent, int parts, std::mt19937& g) {
  parts = static_cast<int>(std::min<int64_t>(parts, extent));
  std::vector<int64_t> points;
  for (int64_t p = 1; p < extent; ++p) points.push_back(p);
  std::shuffle(points.begin(), points.end(), g);
  points.resize(static_cast<size_t>(parts - 1));
  std::sort(points.begin(), points.end());
  points.push_back(extent);
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t lo = 0;
  for (int64_t p : points) {
    out.push_back({lo, p - 1});
    lo = p;
  }
  return out;
}

// A grid of blocks: 2..5 uneven pieces along every splittable dim, the whole extent elsewhere.
std::vector<Box> random_partition(const poly::Signature& s, std::mt19937& g) {
  std::vector<Box> blocks{Box(std::vector<int64_t>{}, std::vector<int64_t>{})};
  for (const poly::IndexDim& d : s.space) {
    const int parts = d.splittable ? std::uniform_int_distribution<int>(2, 5)(g) : 1;
    const auto cuts = random_cuts(d.extent, parts, g);
    std::vector<Box> next;
    for (const Box& b : blocks)
      for (auto [lo, hi] : cuts) {
        Box c = b;
        c.lo.push_back(lo);
        c.hi.push_back(hi);
        next.push_back(c);
      }
    blocks = std::move(next);
  }
  return blocks;
}

// Every point of `b` as a row-major flat index of a tensor of `shape`.
template <class F> void for_each_point(const Box& b, const Shape& shape, F&& f) {
  const Strides st = contiguous_strides(shape);
  std::vector<int64_t> p = b.lo;
  if (b.empty()) return;
  while (true) {
    int64_t flat = 0;
    for (size_t d = 0; d < p.size(); ++d) flat += p[d] * st[d];
    f(flat);
    size_t d = p.size();
    while (d > 0 && p[d - 1] == b.hi[d - 1]) {
      p[d - 1] = b.lo[d - 1];
      --d;
    }
    if (d == 0) return;
    ++p[d - 1];
  }
}

std::shared_ptr<Value> run_one(const Node& n, const poly::Signature& sig, const Box& b) {
  std::vector<View> ins;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    REQUIRE(n.inputs[i]->value);
    ins.push_back(slice_of(n.inputs[i]->value->view(), sig.input_slice(i, b)));
  }
  auto out = run_block(n, sig, b, ins);
  CHECK(out->v.shape == sig.output_slice(b).extents());
  CHECK(out->v.dtype == n.dtype);
  return out;
}

// Runs n block by block, merges partials of split reductions, assembles the whole output.
std::shared_ptr<Value> run_blocks(const Node& n, const std::vector<Box>& blocks) {
  const poly::Signature sig = poly::signature_of(n);
  std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, std::shared_ptr<Value>> parts;
  for (const Box& b : blocks) {
    auto out = run_one(n, sig, b);
    const Box o = sig.output_slice(b);
    auto [it, fresh] = parts.emplace(std::make_pair(o.lo, o.hi), out);
    if (!fresh) {
      REQUIRE(sig.combine() != poly::CombineKind::None);  // only partials may overlap
      combine_partials(sig.combine(), it->second->v, out->v);
    }
  }
  auto whole = Value::alloc(n.dtype, n.shape);
  std::vector<int> hits(static_cast<size_t>(numel(n.shape)), 0);
  for (auto& [key, v] : parts) {
    const Box o(key.first, key.second);
    cpu::copy_view(v->v, slice_of(whole->v, o));
    for_each_point(o, n.shape, [&](int64_t f) { ++hits[static_cast<size_t>(f)]; });
  }
  CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
  return whole;
}

// `node` run in random blocks equals `expect` (default: node itself) evaluated whole.
void check_blocks(const NodeRef& node, double rtol, uint32_t seed, const NodeRef& expect = nullptr,
                  int trials = 3) {
  CAPTURE(op_def(node->op).name);
  CAPTURE(shape_str(node->shape));
  evaluate(node->inputs);
  const NodeRef want = expect ? expect : node;
  evaluate({want});
  std::mt19937 g(seed);
  for (int t = 0; t < trials; ++t) {
    const std::vector<Box> blocks = random_partition(poly::signature_of(*node), g);
    auto got = run_blocks(*node, blocks);
    CHECK(same_values(got->v, want->value->view(), rtol));
  }
}

// An f32 node computed through a Cast, so that maps see an input that is not a source.
NodeRef src(const Shape& s, std::mt19937& g, DType t = DType::F32) { return random_source(s, t, g); }

}  // namespace

TEST_CASE("engine.run.run_block.generators") {
  check_blocks(build::full({11, 7}, 2.5, DType::F32), 0, 1);
  check_blocks(build::full_int({11, 7}, -3, DType::I64), 0, 2);
  check_blocks(build::full({}, 4, DType::F64), 0, 3);
  check_blocks(build::arange(0, 20, 1.5, DType::F32), 0, 4);
  check_blocks(build::arange(3, 40, 2, DType::I32), 0, 5);
  check_blocks(build::linspace(-1, 1, 13, DType::F64), 0, 6);
  check_blocks(build::eye(11, 7, DType::F32), 0, 7);
  check_blocks(build::rand({11, 7}, 42, DType::F32), 0, 8);
  check_blocks(build::randn({5, 3, 7}, 43, DType::F64), 0, 9);
}

TEST_CASE("engine.run.run_block.every_map_op") {
  std::mt19937 g(11);
  const NodeRef a = src({11, 7}, g), b = src({11, 7}, g), c = src({11, 7}, g, DType::Bool);
  int checked = 0;
  for (const OpDef& d : all_ops()) {
    if (d.kind != OpKind::Map) continue;
    CAPTURE(d.name);
    std::vector<NodeRef> nodes;
    if (d.op == Op::Cast) nodes = {build::cast(a, DType::I32), build::cast(c, DType::F64)};
    else if (d.op == Op::Real || d.op == Op::Imag || d.op == Op::Conj || d.op == Op::Angle)
      nodes = {build::unary(d.op, build::binary(Op::Complex, a, b))};  // the parts of a complex
    else if (d.arity == 1) nodes = {build::unary(d.op, a)};
    else if (d.arity == 2) nodes = {build::binary(d.op, a, b), build::binary(d.op, a, Operand::number(0.5))};
    else nodes = {build::where(c, a, b), build::where(c, a, Operand::number(1))};
    for (const NodeRef& n : nodes) {
      REQUIRE(n->op == d.op);
      check_blocks(n, 0, 100 + checked++);
    }
  }
  CHECK(checked >= 40);
  // Integer division and modulo by zero, in i32.
  const NodeRef i = src({11, 7}, g, DType::I32), j = src({11, 7}, g, DType::I32);
  check_blocks(build::binary(Op::FloorDiv, i, j), 0, 12);
  check_blocks(build::binary(Op::Mod, i, j), 0, 13);
}

TEST_CASE("engine.run.run_block.reductions") {
  std::mt19937 g(21);
  const NodeRef x = random_source({11, 7}, DType::F32, g, 0.5, 1.5);  // products stay near 1
  const NodeRef y = random_source({5, 4, 6}, DType::F64, g, 0.5, 1.5);
  const NodeRef k = src({11, 7}, g, DType::I32), bits = src({11, 7}, g, DType::Bool);
  uint32_t seed = 200;
  for (Op op : {Op::Sum, Op::Prod, Op::Max, Op::Min, Op::All, Op::Any}) {
    CAPTURE(op_def(op).name);
    for (std::vector<int> dims : {std::vector<int>{0}, {1}, {0, 1}}) {
      check_blocks(build::reduce(op, x, dims, false), 1e-5, seed++);
      check_blocks(build::reduce(op, k, dims, false), 0, seed++);
      check_blocks(build::reduce(op, bits, dims, false), 0, seed++);
    }
    check_blocks(build::reduce(op, y, {0, 2}, false), 1e-5, seed++);
  }
  // NaN wins max and min in whichever block it falls.
  auto v = Value::alloc(DType::F32, {11, 7});
  for (int i = 0; i < 77; ++i) v->data<float>()[i] = static_cast<float>(i % 13);
  v->data<float>()[40] = NAN;
  const NodeRef nan = make_source(v, {11, 7}, DType::F32);
  for (Op op : {Op::Max, Op::Min}) {
    check_blocks(build::reduce(op, nan, {0}, false), 0, seed++);
    check_blocks(build::reduce(op, nan, {0, 1}, false), 0, seed++);
  }
}

TEST_CASE("engine.run.run_block.argreduce_keeps_the_reduced_dim_whole") {
  std::mt19937 g(31);
  const NodeRef x = src({11, 7}, g, DType::I32);  // many ties: the first index must win
  const NodeRef y = src({5, 4, 6}, g);
  const NodeRef am = build::argreduce(Op::ArgMax, x, 1, false);
  const poly::Signature s = poly::signature_of(*am);
  CHECK(s.space[0].splittable);
  CHECK_FALSE(s.space[1].splittable);
  check_blocks(am, 0, 1);
  check_blocks(build::argreduce(Op::ArgMin, x, 0, false), 0, 2);
  check_blocks(build::argreduce(Op::ArgMax, y, 1, false), 0, 3);
  check_blocks(build::argreduce(Op::ArgMin, y, std::nullopt, false), 0, 4);
}

TEST_CASE("engine.run.run_block.matmul") {
  std::mt19937 g(41);
  check_blocks(build::matmul(src({11, 7}, g), src({7, 5}, g)), 1e-5, 1);
  check_blocks(build::matmul(src({3, 5, 4}, g, DType::F64), src({3, 4, 6}, g, DType::F64)), 1e-5, 2);
  check_blocks(build::matmul(src({3, 5, 4}, g), src({4, 6}, g)), 1e-5, 3);  // broadcast batch
  check_blocks(build::matmul(src({6, 9}, g, DType::I64), src({9, 4}, g, DType::I64)), 0, 4);
}

TEST_CASE("engine.run.run_block.views") {
  std::mt19937 g(51);
  const NodeRef x = src({3, 5, 4}, g);
  check_blocks(build::permute(x, {2, 0, 1}), 0, 1);
  check_blocks(build::transpose(src({11, 7}, g), 0, 1), 0, 2);
  check_blocks(build::expand(src({7, 1}, g), {3, 7, 5}), 0, 3);
  check_blocks(build::expand(src({}, g, DType::I64), {4, 3}), 0, 4);
  check_blocks(build::slice(src({11, 9}, g), {1, 2}, {3, 2}, {4, 3}), 0, 5);
  check_blocks(build::slice(src({11, 9}, g), {0, 1}, {1, 4}, {11, 2}), 0, 6);
  check_blocks(build::narrow(src({11, 7}, g), 1, 2, 4), 0, 7);
  check_blocks(build::reshape(src({11, 6}, g), {66}), 0, 8);
  check_blocks(build::reshape(src({4, 6}, g), {2, 2, 6}), 0, 9);
  check_blocks(build::constrain(src({11, 7}, g), {2, 1}), 0, 10);
}

// The claim reshape blocks rest on: only leading factors are split, so the flat copy of the
// input slice is the output slice. Checked for every block the signature allows.
TEST_CASE("engine.run.run_block.reshape_every_allowed_block") {
  std::mt19937 g(61);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4, 6}, {2, 2, 6}},       {{6, 4}, {3, 8}}, {{2, 3}, {3, 2}},     {{1, 6}, {6}},
      {{2, 3, 4}, {6, 4}},       {{12}, {3, 4}},   {{3, 4, 5}, {3, 20}}, {{2, 2, 2, 3}, {4, 6}},
      {{6, 1, 4}, {2, 3, 4, 1}}, {{8}, {2, 2, 2}}};
  for (const auto& [from, to] : cases) {
    CAPTURE(shape_str(from));
    CAPTURE(shape_str(to));
    const NodeRef x = src(from, g);
    const NodeRef r = build::reshape(x, to);
    REQUIRE(r->op == Op::Reshape);
    evaluate({r});
    const poly::Signature s = poly::signature_of(*r);
    std::vector<Box> blocks{Box(std::vector<int64_t>{}, std::vector<int64_t>{})};
    for (const poly::IndexDim& d : s.space) {
      std::vector<Box> next;
      for (const Box& b : blocks)
        for (int64_t lo = 0; lo < d.extent; ++lo)
          for (int64_t hi = lo; hi < d.extent; ++hi) {
            if (!d.splittable && (lo != 0 || hi != d.extent - 1)) continue;
            Box c = b;
            c.lo.push_back(lo);
            c.hi.push_back(hi);
            next.push_back(c);
          }
      blocks = std::move(next);
    }
    for (const Box& b : blocks) {
      CAPTURE(to_string(b));
      CHECK(s.input_slice(0, b).volume() == s.output_slice(b).volume());
      auto out = run_one(*r, s, b);
      CHECK(same_values(out->v, slice_of(r->value->view(), s.output_slice(b)), 0));
    }
  }
}

TEST_CASE("engine.run.run_block.cat_and_write_region") {
  std::mt19937 g(71);
  check_blocks(build::cat({src({3, 7}, g), src({5, 7}, g), src({3, 7}, g)}, 0), 0, 1);
  check_blocks(build::cat({src({11, 2}, g), src({11, 5}, g)}, 1), 0, 2);
  check_blocks(build::cat({src({2, 3, 1}, g, DType::I32), src({2, 3, 4}, g, DType::I32)}, 2), 0, 3);
  const NodeRef base = src({11, 7}, g);
  check_blocks(build::write_region(base, {2, 3}, {4, 3}, src({4, 3}, g)), 0, 4);
  check_blocks(build::write_region(base, {0, 0}, {11, 1}, Operand::number(9)), 0, 5);
  check_blocks(build::write_region(base, {10, 6}, {1, 1}, src({1, 1}, g)), 0, 6);
}

TEST_CASE("engine.run.run_block.fused_nodes") {
  std::mt19937 g(81);
  const NodeRef a = src({11, 7}, g), b = src({11, 7}, g), c = src({11, 7}, g);
  const NodeRef y = build::unary(Op::Tanh, build::binary(Op::Add, build::binary(Op::Mul, a, b), c));
  plan::FusedGraph f = plan::fuse({y});
  REQUIRE(f.roots[0]->op == Op::FusedMap);
  check_blocks(f.roots[0], 0, 1, y);
  // A map chain into a sum over dim 1: split along the reduction, partials combined.
  const NodeRef e = build::binary(Op::Mul, build::unary(Op::Exp, a), Operand::number(0.5));
  const NodeRef s = build::reduce(Op::Sum, e, {1}, false);
  f = plan::fuse({s});
  REQUIRE(f.roots[0]->op == Op::FusedReduce);
  check_blocks(f.roots[0], 1e-5, 2, s);
  const NodeRef m = build::reduce(Op::Max, build::binary(Op::Sub, a, b), {0, 1}, false);
  f = plan::fuse({m});
  REQUIRE(f.roots[0]->op == Op::FusedReduce);
  check_blocks(f.roots[0], 0, 3, m);
}

TEST_CASE("engine.run.run_block.combine_partials") {
  auto f = [](std::initializer_list<float> xs) {
    auto v = Value::alloc(DType::F32, {static_cast<int64_t>(xs.size())});
    std::copy(xs.begin(), xs.end(), v->data<float>());
    return v;
  };
  auto acc = f({1, NAN, 3, -1}), part = f({2, 5, NAN, -4});
  combine_partials(poly::CombineKind::Max, acc->v, part->v);
  CHECK(acc->data<float>()[0] == 2);
  CHECK(std::isnan(acc->data<float>()[1]));
  CHECK(std::isnan(acc->data<float>()[2]));
  CHECK(acc->data<float>()[3] == -1);
  acc = f({1, NAN, 3, -1});
  combine_partials(poly::CombineKind::Min, acc->v, part->v);
  CHECK(acc->data<float>()[0] == 1);
  CHECK(std::isnan(acc->data<float>()[1]));
  CHECK(std::isnan(acc->data<float>()[2]));
  CHECK(acc->data<float>()[3] == -4);
  acc = f({1, 2, 3, 4});
  combine_partials(poly::CombineKind::Prod, acc->v, f({2, 2, 2, 0.5})->v);
  CHECK(acc->data<float>()[3] == 2);
  auto bits = Value::alloc(DType::Bool, {2}), other = Value::alloc(DType::Bool, {2});
  bits->data<bool>()[0] = true, bits->data<bool>()[1] = false;
  other->data<bool>()[0] = false, other->data<bool>()[1] = false;
  combine_partials(poly::CombineKind::Or, bits->v, other->v);
  CHECK(bits->data<bool>()[0]);
  combine_partials(poly::CombineKind::And, bits->v, other->v);
  CHECK_FALSE(bits->data<bool>()[0]);
  // A strided accumulator: a column of a matrix.
  auto mat = Value::alloc(DType::I64, {3, 2});
  for (int i = 0; i < 6; ++i) mat->data<int64_t>()[i] = i;
  auto col = Value::alloc(DType::I64, {3});
  for (int i = 0; i < 3; ++i) col->data<int64_t>()[i] = 10;
  View col2;
  REQUIRE(col->v.try_reshape({3, 1}, col2));
  combine_partials(poly::CombineKind::Sum, mat->v.sliced({0, 1}, {1, 1}, {3, 1}), col2);
  CHECK(mat->data<int64_t>()[1] == 11);
  CHECK(mat->data<int64_t>()[5] == 15);
  CHECK(mat->data<int64_t>()[4] == 4);
}
