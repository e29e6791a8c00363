// Fused map programs: leaf layouts (contiguous, broadcast, strided), constants, tiles,
// threads, strided outputs.
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"

using namespace tapestry;
using namespace tapestry::test;
using cpu::MapProgram;

namespace {

std::shared_ptr<Value> iota_f32(const Shape& s, float scale = 1) {
  auto v = Value::alloc(DType::F32, s);
  for (int64_t i = 0; i < v->view().numel(); ++i) v->data<float>()[i] = scale * float(i % 1013);
  return v;
}

MapInstr instr(Op op, int a, int b = -1, int c = -1, DType t = DType::F32) {
  MapInstr m{op, t, t};
  m.a = a, m.b = b, m.c = c;
  return m;
}

MapInstr constant(double v, DType t = DType::F32) {
  MapInstr m{Op::Full, t, t};
  m.real = v;
  m.integer = int64_t(v);
  return m;
}

}  // namespace

TEST_CASE("kernels.cpu.map.fused_chain_many_tiles") {
  // tanh(a * b + c) over sizes around tile boundaries, threads on. (c > 0: no
  // cancellation, so the reference need not round a * b exactly as the kernel does.)
  for (int64_t n : {1, 63, 64, 2047, 2048, 2049, 5000, 100003}) {
    auto a = iota_f32({n}, 1e-3f), b = iota_f32({n}, 2e-3f), c = iota_f32({n}, 1e-3f);
    MapProgram p;
    p.leaves = {a->view(), b->view(), c->view()};
    p.instrs = {instr(Op::Mul, 0, 1), instr(Op::Add, 3, 2), instr(Op::Tanh, 4)};
    auto out = Value::alloc(DType::F32, {n});
    cpu::run_map(p, out->view());
    for (int64_t i = 0; i < n; ++i) {
      const float want = std::tanh(a->data<float>()[i] * b->data<float>()[i] + c->data<float>()[i]);
      CAPTURE(n);
      CAPTURE(i);
      REQUIRE(close(out->data<float>()[i], want, 4e-6));
    }
  }
}

TEST_CASE("kernels.cpu.map.broadcast_leaves") {
  // out[i, j] = row[j] * col[i] + scalar
  const int64_t n = 37, m = 3001;
  auto row = iota_f32({m}, 0.5f), col = iota_f32({n, 1}, 2.0f);
  auto sc = tensor<float>({}, {7.0f});
  MapProgram p;
  p.leaves = {row->view().expanded({n, m}), col->view().expanded({n, m}), sc->view().expanded({n, m})};
  p.instrs = {instr(Op::Mul, 0, 1), instr(Op::Add, 3, 2)};
  auto out = Value::alloc(DType::F32, {n, m});
  cpu::run_map(p, out->view());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      REQUIRE(out->data<float>()[i * m + j] == row->data<float>()[j] * col->data<float>()[i] + 7.0f);
}

TEST_CASE("kernels.cpu.map.strided_leaves_and_output") {
  const int64_t n = 70, m = 90;
  auto a = iota_f32({m, n});            // read transposed
  auto b = iota_f32({n, 2 * m}, 3.0f);  // read every other column
  MapProgram p;
  p.leaves = {a->view().permuted({1, 0}), b->view().sliced({0, 1}, {1, 2}, {n, m})};
  p.instrs = {instr(Op::Sub, 0, 1)};
  // The output itself is a transposed view of a buffer.
  auto buf = Value::alloc(DType::F32, {m, n});
  View out = buf->view().permuted({1, 0});
  cpu::run_map(p, out);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      const float want = a->data<float>()[j * n + i] - b->data<float>()[i * 2 * m + 2 * j + 1];
      REQUIRE(buf->data<float>()[j * n + i] == want);
    }
}

TEST_CASE("kernels.cpu.map.constants_and_dtypes") {
  // where(x > 2, x * 10, -1) in i64, and a program whose result is a constant.
  const int64_t n = 4100;
  auto x = Value::alloc(DType::I64, {n});
  for (int64_t i = 0; i < n; ++i) x->data<int64_t>()[i] = i % 5;
  MapProgram p;
  p.leaves = {x->view()};
  MapInstr gt{Op::Gt, DType::Bool, DType::I64, 0, 1};
  p.instrs = {constant(2, DType::I64),  gt,
              constant(10, DType::I64), instr(Op::Mul, 0, 3, -1, DType::I64),
              constant(-1, DType::I64), instr(Op::Where, 2, 4, 5, DType::I64)};
  auto out = Value::alloc(DType::I64, {n});
  cpu::run_map(p, out->view());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = i % 5;
    REQUIRE(out->data<int64_t>()[i] == (v > 2 ? v * 10 : -1));
  }

  MapProgram k;
  k.leaves = {x->view()};
  k.instrs = {constant(2.5, DType::F64)};
  auto ko = Value::alloc(DType::F64, {n});
  cpu::run_map(k, ko->view());
  CHECK(ko->data<double>()[0] == 2.5);
  CHECK(ko->data<double>()[n - 1] == 2.5);
}

TEST_CASE("kernels.cpu.map.long_program_reuses_registers") {
  // x -> x + 1 repeated 200 times, with a second operand kept alive throughout.
  const int64_t n = 3000;
  auto x = iota_f32({n});
  MapProgram p;
  p.leaves = {x->view()};
  p.instrs.push_back(constant(1));  // register 1
  int last = 0;
  for (int i = 0; i < 200; ++i) {
    p.instrs.push_back(instr(Op::Add, last, 1));
    last = static_cast<int>(p.instrs.size());  // register of that instruction
  }
  auto out = Value::alloc(DType::F32, {n});
  cpu::run_map(p, out->view());
  for (int64_t i = 0; i < n; ++i) REQUIRE(out->data<float>()[i] == float(i % 1013) + 200);
}

TEST_CASE("kernels.cpu.map.in_place_and_scalar_output") {
  auto x = iota_f32({9000});
  MapProgram p;
  p.leaves = {x->view()};
  p.instrs = {instr(Op::Square, 0)};
  cpu::run_map(p, x->view());  // out aliases the leaf elementwise
  for (int64_t i = 0; i < 9000; ++i) REQUIRE(x->data<float>()[i] == float(i % 1013) * float(i % 1013));

  auto s = tensor<double>({}, {-4.0});
  auto o = Value::alloc(DType::F64, {});
  MapProgram q;
  q.leaves = {s->view()};
  q.instrs = {instr(Op::Abs, 0, -1, -1, DType::F64)};
  cpu::run_map(q, o->view());
  CHECK(o->data<double>()[0] == 4.0);
}

TEST_CASE("kernels.cpu.map.empty_and_copy_programs") {
  auto e = Value::alloc(DType::F32, {0, 5});
  MapProgram p;
  p.leaves = {e->view()};
  p.instrs = {instr(Op::Neg, 0)};
  auto o = Value::alloc(DType::F32, {0, 5});
  cpu::run_map(p, o->view());  // nothing to do, nothing touched

  auto x = iota_f32({4, 5});
  MapProgram c;
  c.leaves = {x->view().permuted({1, 0})};
  auto y = Value::alloc(DType::F32, {5, 4});
  cpu::run_map(c, y->view());  // no instructions: a copy
  CHECK(y->data<float>()[1] == x->data<float>()[5]);
}

TEST_CASE("kernels.cpu.map.same_result_for_any_shard") {
  // An element's value must not depend on where its tile or shard starts.
  const int64_t n = 10000;
  auto a = iota_f32({n}, 1.37e-2f);
  auto whole = Value::alloc(DType::F32, {n});
  MapProgram p;
  p.leaves = {a->view()};
  p.instrs = {instr(Op::Tanh, 0), instr(Op::Exp, 1), instr(Op::Gelu, 2)};
  cpu::run_map(p, whole->view());
  for (int64_t start : {1, 17, 4095, 7777}) {
    const int64_t len = n - start;
    MapProgram q = p;
    q.leaves = {a->view().sliced({start}, {1}, {len})};
    auto part = Value::alloc(DType::F32, {len});
    cpu::run_map(q, part->view());
    for (int64_t i = 0; i < len; ++i) REQUIRE(part->data<float>()[i] == whole->data<float>()[start + i]);
  }
}

TEST_CASE("kernels.cpu.map.large_transposed_leaf") {
  // Big enough that run_map copies the transposed leaf first (tiled) instead of
  // gathering it element by element; plus a broadcast leaf that must stay a view.
  const int64_t n = 300, m = 401;
  auto a = iota_f32({m, n});
  auto r = iota_f32({m}, 0.25f);
  MapProgram p;
  p.leaves = {a->view().permuted({1, 0}), r->view().expanded({n, m})};
  p.instrs = {instr(Op::Mul, 0, 1)};
  auto out = Value::alloc(DType::F32, {n, m});
  cpu::run_map(p, out->view());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      REQUIRE(out->data<float>()[i * m + j] == a->data<float>()[j * n + i] * r->data<float>()[j]);
}
