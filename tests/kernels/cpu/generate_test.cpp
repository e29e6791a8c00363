// run_generate: values by global index, so any box equals the same box of the whole.
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"
#include "kernels/cpu/philox.hpp"

using namespace tapestry;
using namespace tapestry::test;

namespace {

std::shared_ptr<Value> whole(Op op, const Attrs& a, DType t, const Shape& s) {
  auto v = Value::alloc(t, s);
  cpu::run_generate(op, a, s, std::vector<int64_t>(s.size(), 0), v->view());
  return v;
}

// Every box given by (origin, extent) equals the slice of the whole tensor.
template <class T>
void check_shards(Op op, const Attrs& a, DType t, const Shape& s,
                  const std::vector<std::pair<std::vector<int64_t>, Shape>>& boxes) {
  auto w = whole(op, a, t, s);
  for (const auto& [origin, extent] : boxes) {
    auto part = Value::alloc(t, extent);
    cpu::run_generate(op, a, s, origin, part->view());
    const auto want = values<T>(w->view().sliced(origin, std::vector<int64_t>(s.size(), 1), extent));
    for (int64_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      REQUIRE(part->template data<T>()[i] == want[i]);
    }
  }
}

Attrs seed(int64_t s) {
  Attrs a;
  a.ints = {s};
  return a;
}

}  // namespace

TEST_CASE("kernels.cpu.generate.philox_known_answers") {
  // Random123's kat_vectors for philox4x32_10.
  uint32_t r[4];
  cpu::philox4x32_10({{0, 0, 0, 0}}, {{0, 0}}, r);
  CHECK(r[0] == 0x6627e8d5u);
  CHECK(r[1] == 0xe169c58du);
  CHECK(r[2] == 0xbc57ac4cu);
  CHECK(r[3] == 0x9b00dbd8u);
  cpu::philox4x32_10({{~0u, ~0u, ~0u, ~0u}}, {{~0u, ~0u}}, r);
  CHECK(r[0] == 0x408f276du);
  CHECK(r[3] == 0x6d5451fdu);
  cpu::philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, {{0xa4093822u, 0x299f31d0u}}, r);
  CHECK(r[0] == 0xd16cfe09u);
  CHECK(r[1] == 0x94fdccebu);
  CHECK(r[2] == 0x5001e420u);
  CHECK(r[3] == 0x24126ea1u);
}

TEST_CASE("kernels.cpu.generate.shards_agree_with_the_whole") {
  const Shape s{7, 9, 5};
  const std::vector<std::pair<std::vector<int64_t>, Shape>> boxes{
      {{0, 0, 0}, {7, 9, 5}}, {{3, 2, 1}, {2, 5, 3}}, {{6, 8, 4}, {1, 1, 1}}, {{1, 0, 0}, {3, 9, 5}}};
  for (Op op : {Op::Rand, Op::Randn}) {
    check_shards<float>(op, seed(42), DType::F32, s, boxes);
    check_shards<double>(op, seed(-7), DType::F64, s, boxes);
  }
  const std::vector<std::pair<std::vector<int64_t>, Shape>> rows{{{5}, {11}}, {{0}, {3}}, {{15}, {1}}};
  Attrs ar;
  ar.ints = {-3, 4};
  ar.reals = {-3, 4};
  check_shards<int32_t>(Op::Arange, ar, DType::I32, {16}, rows);
  check_shards<float>(Op::Arange, ar, DType::F32, {16}, rows);
  Attrs ls;
  ls.reals = {1, 2};
  check_shards<double>(Op::Linspace, ls, DType::F64, {16}, rows);
  check_shards<float>(Op::Eye, Attrs{}, DType::F32, {6, 8}, {{{2, 3}, {3, 4}}, {{0, 5}, {6, 3}}});
}

TEST_CASE("kernels.cpu.generate.values") {
  Attrs full;
  full.reals = {2.5};
  full.ints = {2};
  auto f = whole(Op::Full, full, DType::F32, {3});
  CHECK(f->data<float>()[2] == 2.5f);
  auto fi = whole(Op::Full, full, DType::I64, {3});
  CHECK(fi->data<int64_t>()[0] == 2);
  Attrs big;
  big.ints = {(int64_t(1) << 60) + 1};
  big.reals = {double(big.ints[0])};
  CHECK(whole(Op::Full, big, DType::I64, {1})->data<int64_t>()[0] == (int64_t(1) << 60) + 1);

  Attrs ar;
  ar.ints = {10, -3};
  ar.reals = {0.5, 0.25};
  auto ai = whole(Op::Arange, ar, DType::I64, {4});
  CHECK(ai->data<int64_t>()[3] == 1);
  auto af = whole(Op::Arange, ar, DType::F64, {4});
  CHECK(af->data<double>()[3] == 1.25);

  Attrs ls;
  ls.reals = {0, 1};
  auto l = whole(Op::Linspace, ls, DType::F32, {3});
  CHECK(l->data<float>()[1] == 0.5f);
  ls.reals = {0.1, 0.7};
  auto l7 = whole(Op::Linspace, ls, DType::F64, {7});
  CHECK(l7->data<double>()[6] == 0.7);  // the last point is exactly b
  CHECK(l7->data<double>()[0] == 0.1);
  CHECK(whole(Op::Linspace, ls, DType::F64, {1})->data<double>()[0] == 0.1);

  auto e = whole(Op::Eye, Attrs{}, DType::I32, {2, 3});
  const int32_t want[6] = {1, 0, 0, 0, 1, 0};
  for (int i = 0; i < 6; ++i) CHECK(e->data<int32_t>()[i] == want[i]);
}

TEST_CASE("kernels.cpu.generate.rand_distribution") {
  const int64_t n = 100000;
  for (DType t : {DType::F32, DType::F64}) {
    auto u = whole(Op::Rand, seed(1), t, {n});
    auto g = whole(Op::Randn, seed(1), t, {n});
    double su = 0, sg = 0, sg2 = 0, lo = 1, hi = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double x = t == DType::F32 ? u->data<float>()[i] : u->data<double>()[i];
      const double y = t == DType::F32 ? g->data<float>()[i] : g->data<double>()[i];
      REQUIRE(x >= 0);
      REQUIRE(x < 1);
      REQUIRE(std::isfinite(y));
      lo = std::min(lo, x), hi = std::max(hi, x);
      su += x, sg += y, sg2 += y * y;
    }
    CHECK(std::abs(su / n - 0.5) < 0.01);
    CHECK(lo < 1e-3);
    CHECK(hi > 1 - 1e-3);
    const double mean = sg / n, sd = std::sqrt(sg2 / n - mean * mean);
    CHECK(std::abs(mean) < 0.02);
    CHECK(std::abs(sd - 1) < 0.02);
  }
  // Different seeds differ; rand and randn of one seed are different streams.
  auto a = whole(Op::Rand, seed(1), DType::F32, {8});
  auto b = whole(Op::Rand, seed(2), DType::F32, {8});
  CHECK(a->data<float>()[0] != b->data<float>()[0]);
}
