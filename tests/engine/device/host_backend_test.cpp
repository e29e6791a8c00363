// HostBackend::map_reduce past one chunk (2^18 elements): the chunks run in parallel, each on
// one worker, and must give the same bits on any number of threads and the values of the map
// computed and reduced apart.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "engine/device/host_backend.hpp"
#include "engine/ir/value.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"

using namespace tapestry;

namespace {

// x * y + 0.25 over two f32 leaves of `shape`.
cpu::MapProgram axpb(const View& x, const View& y) {
  cpu::MapProgram p;
  p.leaves = {x, y};
  p.instrs.push_back(MapInstr{Op::Mul, DType::F32, DType::F32, 0, 1});
  MapInstr c{Op::Full, DType::F32, DType::F32};
  c.real = 0.25;
  p.instrs.push_back(c);
  p.instrs.push_back(MapInstr{Op::Add, DType::F32, DType::F32, 2, 3});
  return p;
}

std::shared_ptr<Value> filled(const Shape& s, double scale) {
  auto v = Value::alloc(DType::F32, s);
  for (int64_t i = 0; i < v->v.numel(); ++i) v->data<float>()[i] = float(std::sin(double(i) * scale) * 2.0);
  return v;
}

// map_reduce of axpb over `shape` by `op` over `dims` with `threads` threads.
std::shared_ptr<Value> run(const Shape& shape, Op op, const std::vector<int>& dims, const Shape& out_shape,
                           int threads) {
  auto x = filled(shape, 0.37), y = filled(shape, 0.011);
  auto out = Value::alloc(DType::F32, out_shape);
  const int before = cpu::num_threads();
  cpu::set_num_threads(threads);
  HostBackend().map_reduce(axpb(x->v, y->v), shape, op, dims, out->v);
  cpu::set_num_threads(before);
  return out;
}

// The same, the map computed whole and then reduced.
std::shared_ptr<Value> apart(const Shape& shape, Op op, const std::vector<int>& dims,
                             const Shape& out_shape) {
  auto x = filled(shape, 0.37), y = filled(shape, 0.011);
  auto mapped = Value::alloc(DType::F32, shape);
  cpu::run_map(axpb(x->v, y->v), mapped->v);
  auto out = Value::alloc(DType::F32, out_shape);
  cpu::run_reduce(op, mapped->v, dims, out->v);
  return out;
}

void check(const Shape& shape, Op op, const std::vector<int>& dims, const Shape& out_shape, double rtol) {
  auto one = run(shape, op, dims, out_shape, 1);
  auto three = run(shape, op, dims, out_shape, 3);
  auto ref = apart(shape, op, dims, out_shape);
  const int64_t n = one->v.numel();
  CHECK(std::memcmp(one->data<float>(), three->data<float>(), size_t(n) * sizeof(float)) == 0);
  for (int64_t i = 0; i < n; ++i) {
    const double a = one->data<float>()[i], b = ref->data<float>()[i];
    CAPTURE(i);
    CAPTURE(a);
    CAPTURE(b);
    REQUIRE(std::abs(a - b) <= rtol * std::max(1.0, std::abs(b)));
  }
}

}  // namespace

TEST_CASE("engine.device.host_backend.map_reduce_in_parallel_chunks") {
  const int64_t n = (int64_t(1) << 20) + 37;  // 5 chunks, the last one short
  check({n}, Op::Sum, {0}, {}, 1e-5);
  check({n}, Op::Max, {0}, {}, 0);
  check({n}, Op::Min, {0}, {}, 0);
  // Dim 0 reduced with a kept dim: a partial per chunk, combined in chunk order.
  check({(int64_t(1) << 17) + 3, 5}, Op::Sum, {0}, {5}, 1e-5);
  // Dim 0 kept: each chunk writes its own output rows.
  check({(int64_t(1) << 17) + 3, 7}, Op::Sum, {1}, {(int64_t(1) << 17) + 3}, 1e-6);
  check({(int64_t(1) << 17) + 3, 7}, Op::Max, {1}, {(int64_t(1) << 17) + 3}, 0);
}
