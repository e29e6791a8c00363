#include "tests/mpi/collective_support.hpp"

#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <map>

#include "engine/ir/error.hpp"
#include "engine/run/evaluator.hpp"
#include "engine/shard/rank_program.hpp"

namespace tapestry::mpitest {

using plan::ShardedGraph;

namespace {

bool same_or_close(double got, double want, double rel) {
  if (std::isnan(want)) return std::isnan(got);
  return std::abs(got - want) <= rel * std::max(1.0, std::abs(want));
}

}  // namespace

comm::Mpi& mpi() { return *comm::Mpi::get(); }
int ranks() { return mpi().size(); }
int me() { return mpi().rank(); }

NodeRef source(DType t, const Shape& s, int seed) {
  auto v = Value::alloc(t, s);
  for (int64_t i = 0; i < numel(s); ++i) {
    const int64_t k = (i * 37 + seed * 11) % 17;
    switch (t) {
      case DType::F32:
        v->data<float>()[i] = static_cast<float>(k - 8) / 4 + 0.01f * static_cast<float>(i % 7);
        break;
      case DType::F64:
        v->data<double>()[i] = 1.0 + static_cast<double>(k - 8) / 64;
        break;  // near 1: products stay finite
      case DType::I32:
        v->data<int32_t>()[i] = static_cast<int32_t>(k - 8) * 100003;
        break;  // sums wrap: as the kernels
      case DType::I64: v->data<int64_t>()[i] = (k - 8) * (int64_t(1) << 40); break;
      case DType::Bool: v->data<bool>()[i] = k != 3; break;
      default: throw Error(cat_str("mpitest::source: no values drawn for ", dtype_name(t)));
    }
  }
  return make_source(v, s, t);
}

std::shared_ptr<const Value> reference(const NodeRef& y) {
  evaluate({y});
  auto v = y->value;
  set_value(*y, nullptr);
  return v;
}

uint64_t next_epoch() {
  static uint64_t epoch = 0;
  return ++epoch;
}

std::shared_ptr<Value> finish(RankProgram& p, uint64_t root) {
  comm::Backoff wait;
  while (!p.done()) {
    if (p.advance() || p.collectives_in_flight()) wait.reset();
    wait.pause();
  }
  p.send_outputs();
  std::map<uint64_t, std::shared_ptr<Value>> roots;
  if (me() == 0)
    while (!p.gather_outputs(roots)) wait.pause();
  return roots[root];
}

Outcome run(const ShardedGraph& g, const NodeRef& y, bool collectives) {
  comm::MpiTransport t(mpi(), next_epoch());
  t.use_collectives(collectives);
  Outcome o;
  {
    RankProgram p(g, t);
    o.value = finish(p, y->id);
    o.collective_combines = p.collective_combines();
  }
  o.started = t.collectives_started();
  o.messages = t.messages_sent();
  o.bytes = t.bytes_sent();
  mpi().flush(30.0);
  MPI_Barrier(MPI_COMM_WORLD);
  return o;
}

void check_value(const Outcome& o, const std::shared_ptr<const Value>& want, double rel) {
  // CHECK, not REQUIRE: leaving a case early on one rank would desynchronize the others.
  if (me() != 0) return;
  CHECK(o.value);
  if (!o.value) return;
  const View& g = o.value->v;
  CHECK(g.shape == want->v.shape);
  CHECK(g.dtype == want->v.dtype);
  if (g.shape != want->v.shape || g.dtype != want->v.dtype) return;
  int bad = 0;
  dispatch_dtype(g.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < g.numel(); ++i) {
      const T a = o.value->data<T>()[i], b = want->data<T>()[i];
      const bool ok = std::is_floating_point_v<T>
                          ? same_or_close(static_cast<double>(a), static_cast<double>(b), rel)
                          : a == b;
      if (!ok && ++bad <= 3)
        MESSAGE("element ", i, ": got ", static_cast<double>(a), ", want ", static_cast<double>(b));
    }
  });
  CHECK(bad == 0);
}

std::pair<int64_t, int64_t> part(int64_t n, int parts, int i) {
  return {n * i / parts, n * (i + 1) / parts - 1};
}

}  // namespace tapestry::mpitest
