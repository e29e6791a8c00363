// cpu::PreparedMap: a program run again on new data must give run_map's results bit for bit,
// whatever changed between runs (buffers, broadcast scalars' values, constants, layouts, ops).
#include <doctest/doctest.h>

#include <cstring>

#include "helpers.hpp"

using namespace tapestry;
using namespace tapestry::test;
using cpu::MapProgram;

namespace {

std::shared_ptr<Value> filled(const Shape& s, float scale, float shift = 0) {
  auto v = Value::alloc(DType::F32, s);
  for (int64_t i = 0; i < v->view().numel(); ++i) v->data<float>()[i] = scale * float(i % 251) + shift;
  return v;
}

MapInstr instr(Op op, int a, int b = -1) {
  MapInstr m{op, DType::F32, DType::F32};
  m.a = a, m.b = b;
  return m;
}

MapInstr constant(double v) {
  MapInstr m{Op::Full, DType::F32, DType::F32};
  m.real = v;
  return m;
}

// prepared.run(p) and run_map(p) into fresh outputs of `shape`: the same bytes.
void check_same(cpu::PreparedMap& prepared, const MapProgram& p, const Shape& shape) {
  auto want = Value::alloc(DType::F32, shape), got = Value::alloc(DType::F32, shape);
  std::memset(got->data<float>(), 0xff, static_cast<size_t>(got->view().numel()) * sizeof(float));
  cpu::run_map(p, want->view());
  prepared.run(p, got->view());
  REQUIRE(std::memcmp(want->data<float>(), got->data<float>(),
                      static_cast<size_t>(want->view().numel()) * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("kernels.cpu.map.prepared_rebinds_data_and_constants") {
  // a * s + k, s a broadcast scalar leaf, k a constant: each run has new buffers and values.
  cpu::PreparedMap prepared;
  const Shape shape{300};
  for (int run = 0; run < 4; ++run) {
    auto a = filled(shape, 0.5f + float(run)), s = tensor<float>({}, {2.0f - float(run)});
    MapProgram p;
    p.leaves = {a->view(), s->view().expanded(shape)};
    p.instrs = {instr(Op::Mul, 0, 1), constant(1.5 * run), instr(Op::Add, 2, 3)};
    CAPTURE(run);
    check_same(prepared, p, shape);
    // The scalar's value read on this run, not the first one's.
    auto out = Value::alloc(DType::F32, shape);
    prepared.run(p, out->view());
    CHECK(out->data<float>()[7] == a->data<float>()[7] * (2.0f - float(run)) + float(1.5 * run));
  }
}

TEST_CASE("kernels.cpu.map.prepared_follows_layout_and_program_changes") {
  cpu::PreparedMap prepared;
  const Shape shape{40, 50};
  auto a = filled(shape, 1.0f), b = filled({50}, 0.25f, 1.0f), c = filled(shape, 3.0f);
  auto t = filled({50, 40}, 2.0f);
  MapProgram p;
  p.leaves = {a->view(), c->view()};
  p.instrs = {instr(Op::Sub, 0, 1)};
  check_same(prepared, p, shape);
  p.leaves[1] = b->view().expanded(shape);  // contiguous -> broadcast row
  check_same(prepared, p, shape);
  p.leaves[1] = t->view().permuted({1, 0});  // -> transposed
  check_same(prepared, p, shape);
  p.instrs = {instr(Op::Mul, 0, 1)};  // the op changes, layouts do not
  check_same(prepared, p, shape);
  p.instrs = {instr(Op::Mul, 0, 1), instr(Op::Neg, 2)};  // a longer program
  check_same(prepared, p, shape);
  // Another shape (fewer elements), then back.
  const Shape small{7};
  auto d = filled(small, 5.0f), e = filled(small, -1.0f);
  MapProgram q;
  q.leaves = {d->view(), e->view()};
  q.instrs = {instr(Op::Add, 0, 1)};
  check_same(prepared, q, small);
  check_same(prepared, p, shape);
}

TEST_CASE("kernels.cpu.map.prepared_large_and_strided_output") {
  cpu::PreparedMap prepared;
  // Large maps run as run_map does (threads); a run after one must still be right.
  const Shape big{100003};
  auto a = filled(big, 0.125f), b = filled(big, 2.0f);
  MapProgram p;
  p.leaves = {a->view(), b->view()};
  p.instrs = {instr(Op::Add, 0, 1)};
  check_same(prepared, p, big);
  const Shape shape{9, 11};
  auto x = filled(shape, 1.0f);
  MapProgram q;
  q.leaves = {x->view()};
  q.instrs = {instr(Op::Exp, 0)};
  check_same(prepared, q, shape);
  // A transposed output: the prepared program scatters as run_map does.
  for (int run = 0; run < 2; ++run) {
    auto want = Value::alloc(DType::F32, {11, 9}), got = Value::alloc(DType::F32, {11, 9});
    auto y = filled(shape, 1.0f + float(run));
    q.leaves = {y->view()};
    cpu::run_map(q, want->view().permuted({1, 0}));
    prepared.run(q, got->view().permuted({1, 0}));
    REQUIRE(std::memcmp(want->data<float>(), got->data<float>(), 99 * sizeof(float)) == 0);
  }
}
