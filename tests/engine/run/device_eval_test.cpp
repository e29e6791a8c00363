// The device evaluator on the simulated device (engine/device/sim_backend.hpp): the same values as
// evaluate(), what crosses the host boundary, the CPU fallback, and failures.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/device/sim_backend.hpp"
#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/run/device_eval.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/telemetry/cancel.hpp"
#include "engine/telemetry/stats.hpp"

using namespace tapestry;

namespace {

build::Operand num(double v) { return build::Operand::number(v); }

// A leaf holding seeded data in [-10, 10) (integers truncated, bools x > 0).
NodeRef data(const Shape& s, DType t, uint64_t seed) {
  NodeRef x =
      build::binary(Op::Sub, build::binary(Op::Mul, build::rand(s, seed, DType::F64), num(20)), num(10));
  if (t == DType::Bool) x = build::binary(Op::Gt, x, num(0));
  else if (t != DType::F64) x = build::cast(x, t);
  evaluate({x});
  return make_source(x->value, s, t);
}

std::vector<double> values(const Value& v) {
  std::vector<double> out;
  dispatch_dtype(v.v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < v.v.numel(); ++i) out.push_back(static_cast<double>(v.data<T>()[i]));
  });
  return out;
}

bool same(const std::vector<double>& a, const std::vector<double>& b, double rel) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::abs(a[i] - b[i]) > rel * std::max(1.0, std::abs(b[i]))) return false;
  }
  return true;
}

// y on the device, then on the CPU (the value cleared in between): equal within rel.
void check_like_cpu(const NodeRef& y, SimDevice& sim, double rel = 0) {
  evaluate_on_device({y}, sim);
  REQUIRE(y->value != nullptr);
  CHECK(y->value->v.is_contiguous());
  const std::vector<double> dev = values(*y->value);
  const DType dt = y->value->v.dtype;
  const Shape shape = y->value->v.shape;
  set_value(*y, nullptr);
  evaluate({y});
  CHECK(dt == y->value->v.dtype);
  CHECK(shape == y->value->v.shape);
  CHECK(same(dev, values(*y->value), rel));
  set_value(*y, nullptr);
  CHECK(sim.counts().live_bytes == 0);  // nothing stays on the device after an observation
}

int64_t bytes_of(const NodeRef& n) { return numel(n->shape) * static_cast<int64_t>(dtype_size(n->dtype)); }

}  // namespace

TEST_CASE("engine.run.device_eval.maps_in_every_dtype") {
  SimDevice sim;
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    NodeRef a = data({5, 7}, t, 1), b = data({5, 7}, t, 2);
    check_like_cpu(
        build::where(build::binary(Op::Gt, a, b), build::binary(Op::Mul, a, b), build::binary(Op::Sub, a, b)),
        sim);
    check_like_cpu(
        build::binary(Op::FloorDiv, a,
                      build::binary(Op::Add, build::unary(Op::Abs, b), build::Operand::integer_number(1))),
        sim);
    check_like_cpu(build::cast(build::unary(Op::Neg, a), DType::F64), sim);
  }
  NodeRef p = data({9}, DType::Bool, 3), q = data({9}, DType::Bool, 4);
  check_like_cpu(build::binary(Op::LogicalOr, p, build::unary(Op::LogicalNot, q)), sim);
}

TEST_CASE("engine.run.device_eval.fused_chain_is_one_kernel_over_leaves_uploaded_once") {
  SimDevice sim;
  NodeRef a = data({64, 33}, DType::F32, 5), b = data({64, 33}, DType::F32, 6), c = data({33}, DType::F32, 7);
  // c is broadcast: an Expand view of the uploaded leaf, not an expanded copy.
  NodeRef y = build::unary(
      Op::Tanh, build::binary(Op::Add, build::binary(Op::Mul, a, build::binary(Op::Mul, a, b)), c));
  const uint64_t k0 = stats().kernels;
  check_like_cpu(y, sim);
  CHECK(stats().kernels - k0 == 2);  // one fused map on the device, one on the CPU
  CHECK(sim.counts().uploads == 3);  // a, b, c: a read twice, uploaded once
  CHECK(sim.counts().upload_bytes == bytes_of(a) + bytes_of(b) + bytes_of(c));
  CHECK(sim.counts().downloads == 1);
  CHECK(sim.counts().download_bytes == bytes_of(y));
}

TEST_CASE("engine.run.device_eval.a_group_larger_than_a_program_runs_op_by_op") {
  SimDevice sim(MapLimits{2, 3});
  NodeRef a = data({10}, DType::F64, 8), b = data({10}, DType::F64, 9), c = data({10}, DType::F64, 10);
  NodeRef y = build::unary(Op::Sin, build::binary(Op::Add, build::binary(Op::Mul, a, b),
                                                  build::binary(Op::Mul, build::unary(Op::Exp, c), num(2))));
  check_like_cpu(y, sim);
  CHECK(sim.counts().uploads == 3);
  CHECK(sim.counts().downloads == 1);
}

TEST_CASE("engine.run.device_eval.reductions") {
  SimDevice sim;
  NodeRef x = data({6, 5, 4}, DType::F64, 11);
  for (Op op : {Op::Sum, Op::Prod, Op::Max, Op::Min}) {
    check_like_cpu(build::reduce(op, x, {1}, false), sim, 1e-12);
    check_like_cpu(build::reduce(op, build::permute(x, {2, 0, 1}), {0, 2}, true), sim, 1e-12);
  }
  check_like_cpu(build::reduce(Op::Sum, build::unary(Op::Square, x), {}, false), sim,
                 1e-12);  // a map feeding a sum
  check_like_cpu(build::argreduce(Op::ArgMax, x, 1, false), sim);
  check_like_cpu(build::argreduce(Op::ArgMin, x, std::nullopt, false), sim);
  NodeRef b = data({6, 5}, DType::Bool, 12);
  check_like_cpu(build::reduce(Op::All, b, {1}, false), sim);
  check_like_cpu(build::reduce(Op::Any, b, {0}, false), sim);
  check_like_cpu(build::reduce(Op::Sum, b, {}, false), sim);
  // The CPU computes a variance in one pass (evaluator.cpp); here it is two: equal to rounding.
  check_like_cpu(build::var(build::cast(x, DType::F32), {2}, 1, false), sim, 1e-5);
  CHECK(sim.counts().uploads == 15);  // once per observation that reads x (or b)
}

TEST_CASE("engine.run.device_eval.matmul") {
  SimDevice sim;
  for (DType t : {DType::F32, DType::F64, DType::I64}) {
    NodeRef a = data({3, 4, 5}, t, 13), b = data({5, 4}, t, 14);
    // b's transpose is a view of b: the kernel gets the strides.
    check_like_cpu(build::matmul(a, build::transpose(build::transpose(b, 0, 1), 0, 1)), sim, 1e-6);
    check_like_cpu(build::matmul(build::transpose(a, 1, 2), build::transpose(b, 0, 1)), sim, 1e-6);
  }
}

TEST_CASE("engine.run.device_eval.stencils_convolutions_pools") {
  SimDevice sim;
  NodeRef u = data({12, 10}, DType::F64, 15);
  NodeRef k = data({3, 3}, DType::F64, 16);
  check_like_cpu(build::correlate(u, k, {1, 1}, {1, 1}), sim, 1e-12);
  check_like_cpu(build::correlate(u, k, {0, 2}, {2, 0}), sim, 1e-12);
  // A heat step: the stencil read by a map (the CPU bands it inside the map; here it is a kernel).
  check_like_cpu(
      build::binary(Op::Add, u,
                    build::binary(Op::Mul, num(0.1), build::stencil(u, k, build::Boundary::Periodic))),
      sim, 1e-12);
  NodeRef x = data({2, 4, 9, 8}, DType::F32, 17), w = data({6, 2, 3, 3}, DType::F32, 18);
  build::Conv2dOptions o;
  o.stride[0] = 2;
  o.padding[0] = o.padding[1] = 1;
  o.groups = 2;
  check_like_cpu(build::conv2d(x, w, o), sim, 1e-5);
  const int64_t kern[2] = {3, 2}, stride[2] = {2, 2}, pad[2] = {1, 1};
  check_like_cpu(build::pool2d(Op::MaxPool2d, x, kern, stride, pad), sim);
  check_like_cpu(build::pool2d(Op::AvgPool2d, x, kern, stride, pad), sim, 1e-6);
}

TEST_CASE("engine.run.device_eval.generators_need_no_upload") {
  SimDevice sim;
  check_like_cpu(build::arange(1, 20, 3, DType::I64), sim);
  check_like_cpu(build::linspace(-1, 1, 9, DType::F32), sim);
  check_like_cpu(build::eye(4, 5, DType::F64), sim);
  check_like_cpu(build::rand({7, 3}, 42, DType::F32), sim);
  check_like_cpu(build::randn({7, 3}, 42, DType::F64), sim);
  check_like_cpu(
      build::binary(Op::Mul, build::full({3, 2}, 2.5, DType::F32), build::arange(1, 2, 1, DType::F32)), sim);
  CHECK(sim.counts().uploads == 0);
  CHECK(sim.counts().downloads == 6);
}

TEST_CASE("engine.run.device_eval.views_cat_write_and_a_copying_reshape") {
  SimDevice sim;
  NodeRef m = data({4, 6}, DType::F32, 19);
  NodeRef t = build::transpose(m, 0, 1);
  check_like_cpu(build::cat({t, build::unary(Op::Neg, t)}, 1), sim);
  // A transpose of a device value reshaped: not expressible as strides, so a device copy.
  check_like_cpu(build::reshape(build::transpose(build::unary(Op::Exp, m), 0, 1), {3, 8}), sim);
  check_like_cpu(build::write_region(m, {1, 2}, {2, 3}, build::full({2, 3}, 7, DType::F32)), sim);
  CHECK(sim.counts().uploads == 3);  // m, once per observation
  CHECK(sim.counts().downloads == 3);
  // Views of a leaf are made where the leaf is, on the host: nothing moves.
  check_like_cpu(t, sim);
  check_like_cpu(build::reshape(t, {3, 8}), sim);
  check_like_cpu(build::slice(m, {1, 0}, {2, 3}, {2, 2}), sim);
  CHECK(sim.counts().uploads == 3);
  CHECK(sim.counts().downloads == 3);
}

TEST_CASE("engine.run.device_eval.only_roots_come_back") {
  SimDevice sim;
  NodeRef x = data({50, 40}, DType::F32, 20), w = data({40, 30}, DType::F32, 21);
  NodeRef h = build::unary(Op::Relu, build::matmul(x, w));
  NodeRef y1 = build::reduce(Op::Sum, h, {1}, false);
  NodeRef y2 = build::binary(Op::Mul, h, num(2));
  evaluate_on_device({y1, y2, y1}, sim);
  REQUIRE(y1->value);
  REQUIRE(y2->value);
  CHECK(h->value == nullptr);  // an intermediate stays on the device
  CHECK(sim.counts().uploads == 2);
  CHECK(sim.counts().upload_bytes == bytes_of(x) + bytes_of(w));
  CHECK(sim.counts().downloads == 2);
  CHECK(sim.counts().download_bytes == bytes_of(y1) + bytes_of(y2));
  CHECK(sim.counts().live_bytes == 0);
  const std::vector<double> v1 = values(*y1->value), v2 = values(*y2->value);
  set_value(*y1, nullptr);
  set_value(*y2, nullptr);
  evaluate({y1, y2});
  CHECK(same(v1, values(*y1->value), 1e-6));
  CHECK(same(v2, values(*y2->value), 1e-6));
  // Roots that already hold values: nothing runs, nothing moves.
  evaluate_on_device({y1, y2}, sim);
  CHECK(sim.counts().uploads == 2);
  CHECK(sim.counts().downloads == 2);
}

TEST_CASE("engine.run.device_eval.unsupported_ops_run_on_the_cpu") {
  SUBCASE("a matmul: leaves read in place, its result uploaded for the map") {
    SimDevice sim;
    sim.refuse(Op::Matmul);
    NodeRef a = data({8, 5}, DType::F64, 22), b = data({5, 3}, DType::F64, 23),
            c = data({8, 3}, DType::F64, 24);
    NodeRef y = build::unary(Op::Relu, build::binary(Op::Add, build::matmul(a, b), c));
    check_like_cpu(y, sim, 1e-12);
    CHECK(sim.counts().uploads == 2);  // the matmul's result and c; a and b never go up
    CHECK(sim.counts().upload_bytes == bytes_of(c) * 2);
    CHECK(sim.counts().downloads == 1);
  }
  SUBCASE("one op of a fused group sends the group to the CPU: its device input comes down") {
    SimDevice sim;
    sim.refuse(Op::Exp);
    NodeRef x = data({8, 6}, DType::F32, 25);
    NodeRef s = build::reduce(Op::Sum, x, {1}, false);  // on the device
    NodeRef y = build::binary(Op::Add, build::unary(Op::Exp, build::binary(Op::Mul, s, num(0.1))), num(1));
    check_like_cpu(y, sim, 1e-6);
    CHECK(sim.counts().uploads == 1);    // x
    CHECK(sim.counts().downloads == 1);  // s; y was computed on the host
  }
  SUBCASE("a stencil on the CPU between device maps") {
    SimDevice sim;
    sim.refuse(Op::Correlate);
    NodeRef u = data({9, 9}, DType::F64, 26), k = data({3, 3}, DType::F64, 27);
    NodeRef v = build::unary(Op::Tanh, u);
    NodeRef y = build::binary(Op::Sub, v, build::correlate(v, k, {1, 1}, {1, 1}));
    check_like_cpu(y, sim, 1e-12);
    CHECK(sim.counts().uploads == 2);    // u, then the stencil's result
    CHECK(sim.counts().downloads == 2);  // v for the stencil, then y
  }
}

TEST_CASE("engine.run.device_eval.failure_leaves_roots_unchanged") {
  NodeRef x = data({64, 64}, DType::F32, 28);
  NodeRef y1 = build::unary(Op::Exp, x);
  NodeRef y2 = build::matmul(build::unary(Op::Sin, x), build::unary(Op::Cos, x));
  SUBCASE("out of device memory part way") {
    SimDevice sim(MapLimits{}, 3 * bytes_of(x));  // x, y1 and sin(x) fit; cos(x) does not
    CHECK_THROWS_AS(evaluate_on_device({y1, y2}, sim), Error);
    CHECK(y1->value == nullptr);
    CHECK(y2->value == nullptr);
    CHECK(sim.counts().live_bytes == 0);  // every buffer freed on the way out
    CHECK(sim.counts().downloads == 0);
  }
  SUBCASE("cancelled") {
    SimDevice sim;
    request_cancel();
    CHECK_THROWS_AS(evaluate_on_device({y1, y2}, sim), Cancelled);
    clear_cancel();
    CHECK(y1->value == nullptr);
    CHECK(y2->value == nullptr);
    CHECK(sim.counts().live_bytes == 0);
  }
}

TEST_CASE("engine.run.device_eval.host_views_are_not_device_memory") {
  SimDevice sim;
  auto v = Value::alloc(DType::F32, {4});
  CHECK_THROWS_AS(sim.view(HostBackend::wrap(v->view())), InternalError);
}

TEST_CASE("engine.run.device_eval.kept_copies_are_not_uploaded_again") {
  SimDevice sim;
  DeviceCopies copies(uint64_t{1} << 30);
  NodeRef w = data({32, 32}, DType::F32, 40), x = data({32, 32}, DType::F32, 41);
  NodeRef y = build::binary(Op::Add, build::matmul(x, w), num(1));
  evaluate_on_device({y}, sim, &copies);
  CHECK(sim.counts().uploads == 2);  // x and w, now kept
  CHECK(copies.size() == 3);         // x, w and y's device value
  // A new expression over the same leaves and the last result: nothing crosses to the device.
  NodeRef z = build::binary(Op::Mul, build::matmul(y, w), x);
  evaluate_on_device({z}, sim, &copies);
  CHECK(sim.counts().uploads == 2);
  const std::vector<double> dev = values(*z->value);
  set_value(*z, nullptr);
  evaluate({z});
  CHECK(same(dev, values(*z->value), 0));
  // A value that died drops its copy: the device memory goes back.
  const int64_t live = sim.counts().live_bytes;
  set_value(*z, nullptr);
  z = nullptr;
  copies.sweep();  // as every observation does first
  CHECK(sim.counts().live_bytes < live);
  CHECK(copies.size() == 3);
  copies.clear();
  CHECK(sim.counts().live_bytes == 0);
}

TEST_CASE("engine.run.device_eval.kept_copies_stay_within_their_budget") {
  SimDevice sim;
  NodeRef a = data({64}, DType::F64, 42), b = data({64}, DType::F64, 43), c = data({64}, DType::F64, 44);
  DeviceCopies copies(2 * bytes_of(a));  // room for two of them
  for (const NodeRef& x : {a, b, c}) evaluate_on_device({build::unary(Op::Exp, x)}, sim, &copies);
  CHECK(copies.bytes() <= 2 * bytes_of(a));
  // The least recently used went first: c and exp(c) are kept, a's copy is gone.
  const int64_t uploads = sim.counts().uploads;
  evaluate_on_device({build::unary(Op::Sin, c)}, sim, &copies);
  CHECK(sim.counts().uploads == uploads);
  evaluate_on_device({build::unary(Op::Sin, a)}, sim, &copies);
  CHECK(sim.counts().uploads == uploads + 1);
}

TEST_CASE("engine.run.device_eval.a_full_device_frees_the_kept_copies_and_runs_again") {
  NodeRef a = data({256}, DType::F64, 45), b = data({256}, DType::F64, 46);
  SimDevice sim(MapLimits{}, 3 * bytes_of(a));
  DeviceCopies copies(uint64_t{1} << 30);
  NodeRef ea = build::unary(Op::Exp, a);
  evaluate_on_device({ea}, sim, &copies);  // a and exp(a) kept: 2 of the device's 3 slots
  CHECK(copies.size() == 2);
  // One fused program: b uploaded fills the device, its output fits only once the copies went.
  NodeRef y = build::binary(Op::Add, build::unary(Op::Sin, b), build::unary(Op::Cos, b));
  evaluate_on_device({y}, sim, &copies);
  CHECK(copies.size() == 2);  // b and y, kept by the second run
  REQUIRE(y->value != nullptr);
  const std::vector<double> dev = values(*y->value);
  set_value(*y, nullptr);
  evaluate({y});
  CHECK(same(dev, values(*y->value), 1e-12));
}
