// Packed storage as graph (engine/ir/build/packed.hpp) and the contractions over declared
// properties (packed_contract.hpp): layouts, round trips, and values against the dense ops.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/einsum.hpp"
#include "engine/ir/build/packed.hpp"
#include "engine/ir/build/packed_contract.hpp"
#include "engine/ir/properties.hpp"
#include "engine/ir/value.hpp"
#include "engine/run/evaluator.hpp"

using namespace tapestry;

namespace {

NodeRef random_source(const Shape& s, unsigned seed) {
  auto v = Value::alloc(DType::F64, s);
  std::mt19937 gen(seed);
  std::normal_distribution<double> d;
  for (int64_t i = 0; i < numel(s); ++i) v->data<double>()[i] = d(gen);
  return make_source(v, s, DType::F64);
}

// x made (anti)symmetric in each group, declared (trusted).
NodeRef symmetric(NodeRef x, const std::vector<SymmetryGroup>& groups) {
  for (const SymmetryGroup& g : groups) {
    const NodeRef t = build::transpose(x, g.dims[0], g.dims[1]);
    x = build::binary(g.anti ? Op::Sub : Op::Add, x, t);
  }
  return build::declare(x, PropertiesAttrs{groups, {}, {}, {}}, true);
}

double max_diff(const NodeRef& a, const NodeRef& b) {
  const NodeRef d = build::reduce(Op::Max, build::unary(Op::Abs, build::binary(Op::Sub, a, b)), {}, false);
  evaluate({d});
  return d->value->data<double>()[0];
}

}  // namespace

TEST_CASE("engine.ir.build.packed.tile_choice") {
  CHECK(build::group_tile(256, 2, false) == 16);  // 136 of 256 tiles: 0.53x dense
  CHECK(build::group_tile(6, 3, true) == 1);      // C(6,3) = 20 elements
  const build::PackedGroup g = build::packed_group({false, {0, 1}}, 256);
  CHECK(g.g == 16);
  CHECK(g.stored.size() == 136);
  CHECK(g.index_of({1, 1}) == 16);
  CHECK(build::multiplicity({0, 1}) == 2);
  CHECK(build::multiplicity({2, 2}) == 1);
  CHECK(build::multiplicity({0, 1, 1}) == 3);
  CHECK(build::multiplicity({0, 1, 2}) == 6);
  // An empty dim (an einsum of a declared operand of size 0 there): no tiles, and no division
  // by a tile of 0 (SIGFPE in the differential fuzzer, seed 37).
  CHECK(build::group_tile(0, 2, true) == 1);
  const build::PackedGroup e = build::packed_group({true, {0, 1}}, 0);
  CHECK(e.g == 0);
  CHECK(e.stored.empty());
}

TEST_CASE("engine.ir.build.packed.layouts") {
  const auto sym = build::packing_of({256, 256, 3}, PropertiesAttrs{{{false, {0, 1}}}, {}, {}, {}});
  REQUIRE(sym);
  CHECK(sym->packed_shape() == Shape{136, 16, 16, 3});
  CHECK(!sym->padded());
  const auto two =
      build::packing_of({5, 5, 7, 7}, PropertiesAttrs{{{true, {2, 3}}, {true, {0, 1}}}, {}, {}, {}});
  REQUIRE(two);
  CHECK(two->groups[0].dims == std::vector<int>{0, 1});  // in order of their first dims
  CHECK(two->packed_shape() == Shape{10, 21, 1, 1, 1, 1});
  const auto tiles = build::packing_of(
      {10, 7}, PropertiesAttrs{{}, {4, 3}, {true, false, true, false, false, false, false, true, true}, {}});
  REQUIRE(tiles);
  CHECK(tiles->packed_shape() == Shape{4, 4, 3});
  CHECK(tiles->padded());
  // nothing to gain: every tile nonzero, or a group of one tile
  CHECK(!build::packing_of({4, 4}, PropertiesAttrs{{}, {2, 2}, {true, true, true, true}, {}}));
  CHECK(!build::packing_of({1, 1}, PropertiesAttrs{{{false, {0, 1}}}, {}, {}, {}}));
}

TEST_CASE("engine.ir.build.packed.round_trip") {
  for (const bool anti : {false, true}) {
    const NodeRef x = symmetric(random_source({17, 17, 2}, 1), {{anti, {0, 1}}});
    const auto pk = build::packing_of(x->shape, properties_of(x).declared());
    REQUIRE(pk);
    CHECK(pk->padded());  // 17 = 8 tiles of 2 + 1
    const NodeRef p = build::pack(x, *pk);
    CHECK(p->shape == pk->packed_shape());
    const NodeRef y = build::unpack(p, *pk);
    CHECK(build::packed_source(y, *pk) == p);
    CHECK(build::pack(y, *pk) == p);  // pack(unpack(P)) is P, no views
    CHECK(build::unpacked(y)->p == p);
    CHECK(properties_of(y).groups == pk->declared().groups);
    CHECK(max_diff(y, x) == 0);
    CHECK(build::held_bytes(y) == numel(p->shape) * 8);
  }
  const NodeRef g3 = symmetric(symmetric(random_source({4, 4, 4}, 2), {{true, {0, 1}}}), {{true, {1, 2}}});
  const NodeRef a3 =
      build::declare(build::binary(Op::Add, build::binary(Op::Add, g3, build::permute(g3, {1, 2, 0})),
                                   build::permute(g3, {2, 0, 1})),
                     PropertiesAttrs{{{true, {0, 1, 2}}}, {}, {}, {}}, true);
  const auto pk3 = build::packing_of(a3->shape, properties_of(a3).declared());
  REQUIRE(pk3);
  CHECK(pk3->packed_shape() == Shape{4, 1, 1, 1});  // C(4,3) strictly increasing tuples
  CHECK(max_diff(build::unpack(build::pack(a3, *pk3), *pk3), a3) < 1e-12);
}

TEST_CASE("engine.ir.build.packed.stored_form") {
  const NodeRef x = symmetric(random_source({20, 20}, 3), {{false, {0, 1}}});
  const NodeRef kept = build::stored_form(x);
  CHECK(kept->op == Op::Declare);
  CHECK(kept->shape == Shape{55, 2, 2});
  const PropertiesAttrs a = properties_of(kept).declared();
  CHECK(a.packed == Shape{20, 20});
  CHECK(properties_of(kept).groups.empty());  // nothing is claimed of P's own dims
  const NodeRef back = build::read_form(kept, {});
  CHECK(back->shape == Shape{20, 20});
  CHECK(max_diff(back, x) == 0);
  CHECK(build::stored_form(build::full({20, 20}, 1, DType::F64))->op == Op::Full);  // constants stay
}

TEST_CASE("engine.ir.build.packed.maps_and_reductions") {
  const NodeRef x = build::unpack(build::pack(symmetric(random_source({9, 9}, 4), {{false, {0, 1}}}),
                                              *build::packing_of({9, 9}, {{{false, {0, 1}}}, {}, {}, {}})),
                                  *build::packing_of({9, 9}, {{{false, {0, 1}}}, {}, {}, {}}));
  const NodeRef e = build::unary(Op::Exp, x);
  REQUIRE(build::unpacked(e));
  CHECK(build::unpacked(e)->p->shape == Shape{45, 1, 1});
  const NodeRef d = build::dense(x);
  CHECK(max_diff(e, build::unary(Op::Exp, d)) < 1e-12);
  const NodeRef s = build::reduce(Op::Sum, x, {}, false);
  CHECK(s->inputs[0]->op != Op::Declare);  // from the stored tiles
  CHECK(max_diff(s, build::reduce(Op::Sum, d, {}, false)) < 1e-12);
  CHECK(max_diff(build::reduce(Op::Max, x, {}, false), build::reduce(Op::Max, d, {}, false)) == 0);
}

// Whether y's graph reaches x (the dense unpack): a reduction from the stored tiles does not.
bool reaches(const NodeRef& y, const NodeRef& x) {
  std::vector<const Node*> todo{y.get()};
  std::set<const Node*> seen;
  while (!todo.empty()) {
    const Node* n = todo.back();
    todo.pop_back();
    if (n == x.get()) return true;
    if (!seen.insert(n).second) continue;
    for (const NodeRef& i : n->inputs) todo.push_back(i.get());
  }
  return false;
}

TEST_CASE("engine.ir.build.packed.reductions_cutting_groups") {
  // max / min over one dim of a pair (antisymmetric: mirrored tiles take -min), sums cutting a
  // group of a tensor with two groups: from P, equal to the dense reductions (edge tiles padded)
  const PropertiesAttrs pa{{{true, {0, 1}}}, {}, {}, {}};
  const NodeRef a = build::unpack(
      build::pack(symmetric(random_source({37, 37}, 5), pa.groups), *build::packing_of({37, 37}, pa)),
      *build::packing_of({37, 37}, pa));
  const NodeRef ad = build::dense(a);
  for (const Op op : {Op::Max, Op::Min, Op::Sum})
    for (const int d : {0, 1}) {
      const NodeRef r = build::reduce(op, a, {d}, false);
      CHECK(!reaches(r, a));
      CHECK(max_diff(r, build::reduce(op, ad, {d}, false)) < 1e-12);
    }
  const PropertiesAttrs two{{{true, {0, 1}}, {false, {2, 3}}}, {}, {}, {}};
  const Shape s{6, 6, 5, 5};
  const NodeRef g =
      build::unpack(build::pack(symmetric(random_source(s, 6), two.groups), *build::packing_of(s, two)),
                    *build::packing_of(s, two));
  const NodeRef gd = build::dense(g);
  for (const std::vector<int>& dims : {std::vector<int>{0}, {2}, {0, 2}, {1, 2, 3}}) {
    const NodeRef r = build::reduce(Op::Sum, g, dims, false);
    CHECK(!reaches(r, g));
    CHECK(max_diff(r, build::reduce(Op::Sum, gd, dims, false)) < 1e-10);
  }
  const NodeRef m = build::reduce(Op::Max, g, {2}, false);  // the antisymmetric group kept: dense
  CHECK(max_diff(m, build::reduce(Op::Max, gd, {2}, false)) == 0);
  CHECK(max_diff(build::reduce(Op::Max, g, {0}, false), build::reduce(Op::Max, gd, {0}, false)) < 1e-12);
  CHECK(!reaches(build::reduce(Op::Max, g, {0}, false), g));
}

TEST_CASE("engine.ir.build.packed_contract.antisymmetric_pairs") {
  const std::vector<SymmetryGroup> groups{{true, {0, 1}}, {true, {2, 3}}};
  const NodeRef a = symmetric(random_source({5, 5, 5, 5}, 5), groups);
  const NodeRef b = symmetric(random_source({5, 5, 5, 5}, 6), groups);
  const NodeRef c = build::structured_contract(a, "abij", b, "ijcd", "abcd");
  REQUIRE(c);
  const auto u = build::unpacked(c);
  REQUIRE(u);
  CHECK(u->p->shape == Shape{10, 10, 1, 1, 1, 1});
  CHECK(max_diff(c, build::einsum("abij,ijcd->abcd", {build::dense(a), build::dense(b)})) < 1e-10);
  CHECK(max_diff(build::einsum("abij,jicd->abcd", {a, b}),
                 build::einsum("abij,jicd->abcd", {build::dense(a), build::dense(b)})) < 1e-10);
  CHECK(build::stored_form(c)->inputs[0] == u->p);  // a named result keeps just the stored tiles
  // an output group of one operand alone
  const NodeRef m = random_source({5, 5}, 7);
  const NodeRef o = build::structured_contract(a, "abij", m, "jk", "abik");
  REQUIRE(o);
  CHECK(properties_of(o).groups == std::vector<SymmetryGroup>{{true, {0, 1}}});
  CHECK(max_diff(o, build::einsum("abij,jk->abik", {build::dense(a), m})) < 1e-10);
  // no group it can use: nullptr
  const NodeRef sym = symmetric(random_source({5, 5}, 8), {{false, {0, 1}}});
  CHECK(!build::structured_contract(sym, "ij", m, "jk", "ik"));
  CHECK(!build::structured_contract(random_source({5, 5}, 7), "ij", random_source({5, 5}, 8), "jk", "ik"));
}

TEST_CASE("engine.ir.build.packed_contract.block_sparse") {
  // 10x7 in tiles {4,3}: tiles (0,0), (0,2), (2,1), (2,2) nonzero
  const std::vector<bool> mask{true, false, true, false, false, false, false, true, true};
  NodeRef x = random_source({10, 7}, 9);
  std::vector<NodeRef> rows;
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<NodeRef> tiles;
    for (int64_t j = 0; j < 3; ++j) {
      const int64_t h = std::min<int64_t>(4, 10 - 4 * i), w = std::min<int64_t>(3, 7 - 3 * j);
      const NodeRef t = build::narrow(build::narrow(x, 0, 4 * i, h), 1, 3 * j, w);
      tiles.push_back(mask[i * 3 + j] ? t : build::full({h, w}, 0, DType::F64));
    }
    rows.push_back(build::cat(tiles, 1));
  }
  const NodeRef dense = build::cat(rows, 0);
  const NodeRef s = build::declare(dense, PropertiesAttrs{{}, {4, 3}, mask, {}}, true);
  const NodeRef y = random_source({7, 5}, 10);
  const NodeRef r = build::structured_contract(s, "ik", y, "kj", "ij");
  REQUIRE(r);
  CHECK(properties_of(r).nonzero == std::vector<bool>{true, false, true});
  CHECK(max_diff(r, build::matmul(dense, y)) < 1e-12);
  const NodeRef l = build::matmul(random_source({5, 10}, 11), s);  // the right operand sparse
  CHECK(max_diff(l, build::matmul(random_source({5, 10}, 11), dense)) < 1e-12);
  const NodeRef both = build::matmul(s, build::transpose(s, 0, 1));
  CHECK(properties_of(both).nonzero ==
        std::vector<bool>{true, false, true, false, false, false, true, false, true});
  CHECK(max_diff(both, build::matmul(dense, build::transpose(dense, 0, 1))) < 1e-12);
}

TEST_CASE("engine.ir.build.packed_contract.tile_pairs_batched") {
  // A block-diagonal 12x12 in tiles of 3, kept packed (P {4, 3, 3}), times a dense 12x5: the
  // four tile products are ONE batched contraction that reads P as it lies, so the planner
  // sees the tile dim (4) and can give each rank whole tiles.
  build::Packing pk;
  pk.shape = {12, 12};
  pk.tiles = {3, 3};
  for (int64_t t = 0; t < 16; ++t) pk.mask.push_back(t % 5 == 0);
  pk.nonzero = {0, 5, 10, 15};
  const NodeRef p = random_source({4, 3, 3}, 12);
  const NodeRef s = build::unpack(p, pk);
  const NodeRef y = random_source({12, 5}, 13);
  const NodeRef r = build::structured_contract(s, "ik", y, "kj", "ij");
  REQUIRE(r);
  std::vector<NodeRef> todo{r}, readers_of_p;
  std::set<const Node*> seen;
  while (!todo.empty()) {
    const NodeRef n = todo.back();
    todo.pop_back();
    if (!seen.insert(n.get()).second) continue;
    if (std::find(n->inputs.begin(), n->inputs.end(), p) != n->inputs.end()) readers_of_p.push_back(n);
    for (const NodeRef& i : n->inputs) todo.push_back(i);
  }
  REQUIRE(readers_of_p.size() == 1);  // no per-tile views of P: one product over its tiles
  CHECK(readers_of_p[0]->shape == Shape{4, 3, 5});
  std::vector<NodeRef> rows;  // the same matrix, plain
  for (int64_t i = 0; i < 4; ++i) {
    std::vector<NodeRef> tiles;
    for (int64_t j = 0; j < 4; ++j)
      tiles.push_back(i == j ? build::select(p, 0, i) : build::full({3, 3}, 0, DType::F64));
    rows.push_back(build::cat(tiles, 1));
  }
  const NodeRef dense = build::cat(rows, 0);
  CHECK(max_diff(r, build::matmul(dense, y)) < 1e-12);
  // sparse times sparse: the result is block-diagonal, its P the batched product itself
  const NodeRef ss = build::structured_contract(s, "ik", s, "kj", "ij");
  REQUIRE(ss);
  CHECK(properties_of(ss).nonzero == pk.mask);
  const std::optional<build::Unpacked> u = build::unpacked(ss);
  REQUIRE(u);
  CHECK(u->p->shape == Shape{4, 3, 3});
  CHECK(max_diff(ss, build::matmul(dense, dense)) < 1e-12);
}

namespace {
// The nodes below r (r included) with op `op`.
int64_t count_ops(const NodeRef& r, Op op) {
  std::vector<NodeRef> todo{r};
  std::set<const Node*> seen;
  int64_t k = 0;
  while (!todo.empty()) {
    const NodeRef n = todo.back();
    todo.pop_back();
    if (!seen.insert(n.get()).second) continue;
    k += n->op == op;
    for (const NodeRef& i : n->inputs) todo.push_back(i);
  }
  return k;
}

// A 12x12 matrix in tiles of 3, zero outside the tiles `mask` marks (4x4 grid, row-major),
// declared so; `dense` gets the same values undeclared.
NodeRef tiled12(const std::vector<bool>& mask, unsigned seed, NodeRef& dense) {
  const NodeRef x = random_source({12, 12}, seed);
  std::vector<NodeRef> rows;
  for (int64_t i = 0; i < 4; ++i) {
    std::vector<NodeRef> tiles;
    for (int64_t j = 0; j < 4; ++j)
      tiles.push_back(mask[i * 4 + j] ? build::narrow(build::narrow(x, 0, 3 * i, 3), 1, 3 * j, 3)
                                      : build::full({3, 3}, 0, DType::F64));
    rows.push_back(build::cat(tiles, 1));
  }
  dense = build::cat(rows, 0);
  return build::declare(dense, PropertiesAttrs{{}, {3, 3}, mask, {}}, true);
}
}  // namespace

TEST_CASE("engine.ir.build.packed_contract.tile_runs_accumulate") {
  // Block-tridiagonal: output tiles sum 2 or 3 tile products; padded to 3 (12 slots for 10
  // pairs) they accumulate inside one batched matmul, with no adds of products.
  std::vector<bool> band;
  for (int64_t t = 0; t < 16; ++t) band.push_back(std::abs(t / 4 - t % 4) <= 1);
  NodeRef dense;
  const NodeRef s = tiled12(band, 14, dense);
  const NodeRef y = random_source({12, 5}, 15);
  const NodeRef r = build::structured_contract(s, "ik", y, "kj", "ij");
  REQUIRE(r);
  CHECK(count_ops(r, Op::Matmul) == 1);
  CHECK(count_ops(r, Op::Add) == 0);
  CHECK(max_diff(r, build::matmul(dense, y)) < 1e-12);
  const NodeRef ss = build::structured_contract(s, "ik", s, "kj", "ij");  // pentadiagonal, 1-3 pairs
  REQUIRE(ss);
  CHECK(count_ops(ss, Op::Add) == 0);
  CHECK(max_diff(ss, build::matmul(dense, dense)) < 1e-12);
  // runs of 4, 1, 1 and 1 pairs: padding would double the products, so one batched matmul
  // per run length (4 and 1), the output tiles put back in order
  std::vector<bool> uneven(16, false);
  for (int64_t j = 0; j < 4; ++j) uneven[j] = true;
  uneven[5] = uneven[10] = uneven[15] = true;
  NodeRef udense;
  const NodeRef u = tiled12(uneven, 16, udense);
  const NodeRef ru = build::structured_contract(u, "ik", y, "kj", "ij");
  REQUIRE(ru);
  CHECK(count_ops(ru, Op::Matmul) == 2);
  CHECK(count_ops(ru, Op::Add) == 0);
  CHECK(max_diff(ru, build::matmul(udense, y)) < 1e-12);
}

TEST_CASE("engine.ir.build.packed.stored_block_sparse_split_along_tiles") {
  // A named block-sparse value keeps P constrained to one part per rank along its tile dim,
  // whole tiles on each rank, whatever split the plan computing it would have chosen.
  NodeRef dense;
  const NodeRef s = tiled12({true, false, false, false, false, true, false, false, false, false, true, false,
                             false, false, false, true},
                            17, dense);
  const NodeRef kept = build::stored_form(s);
  REQUIRE(kept->op == Op::Declare);
  const NodeRef& p = kept->inputs[0];
  REQUIRE(p->op == Op::Constrain);
  CHECK(p->shape == Shape{4, 3, 3});
  CHECK(attrs_of<ConstrainAttrs>(*p).parts == std::vector<int64_t>{kPartsPerRank, 1, 1});
  CHECK(attrs_of<ConstrainAttrs>(*p).on(3, p->shape) == std::vector<int64_t>{3, 1, 1});
  CHECK(max_diff(build::read_form(kept, {}), dense) == 0);
  // a symmetric group's P is not constrained
  const NodeRef sym = build::stored_form(symmetric(random_source({20, 20}, 3), {{false, {0, 1}}}));
  CHECK(sym->inputs[0]->op != Op::Constrain);
}
