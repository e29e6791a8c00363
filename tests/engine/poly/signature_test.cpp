#include <doctest/doctest.h>

#include <string>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/fused.hpp"
#include "engine/poly/signature.hpp"

using namespace tapestry;
using namespace tapestry::poly;

namespace {

NodeRef src(const Shape& s, DType t = DType::F32) { return make_source(nullptr, s, t); }

NodeRef node(Op op, std::vector<NodeRef> ins, std::vector<int64_t> ints, Shape shape, DType t = DType::F32) {
  Attrs a;
  a.ints = std::move(ints);
  return make_node(op, std::move(ins), std::move(a), std::move(shape), t);
}

// Small nodes of one op, built directly so that no builder folds them away.
std::vector<NodeRef> samples(Op op) {
  const OpDef& d = op_def(op);
  switch (d.kind) {
    case OpKind::Source: return {src({3, 4}), src({})};
    case OpKind::Generate: return {node(op, {}, {}, {3, 4}), node(op, {}, {}, {5})};
    case OpKind::Map: {
      std::vector<NodeRef> ins;
      for (int i = 0; i < d.arity; ++i) ins.push_back(src({3, 4}));
      std::vector<NodeRef> scalar_ins;
      for (int i = 0; i < d.arity; ++i) scalar_ins.push_back(src({}));
      return {node(op, ins, {}, {3, 4}), node(op, scalar_ins, {}, {})};
    }
    case OpKind::Reduce:
      return {node(op, {src({3, 4, 5})}, {0, 2}, {4}), node(op, {src({3, 4})}, {0, 1}, {}),
              node(op, {src({3, 4})}, {1}, {3})};
    case OpKind::ArgReduce:
      return {node(op, {src({3, 4, 5})}, {1}, {3, 5}, DType::I64),
              node(op, {src({3, 4})}, {}, {}, DType::I64)};
    case OpKind::Matmul:
      return {node(op, {src({3, 4}), src({4, 5})}, {}, {3, 5}),
              node(op, {src({2, 3, 4}), src({2, 4, 5})}, {}, {2, 3, 5})};
    case OpKind::Cat:
      return {node(op, {src({2, 4}), src({3, 4}), src({1, 4})}, {0}, {6, 4}),
              node(op, {src({3, 2}), src({3, 5})}, {1}, {3, 7})};
    case OpKind::Write:
      return {node(op, {src({4, 5}), src({2, 3})}, {1, 2}, {4, 5}), node(op, {src({4}), src({4})}, {0}, {4})};
    case OpKind::Fused: {
      // x0 * x1 + 2, and sum over dims {0, 2} of exp(x0).
      FusedProgram p{2,
                     {{Op::Mul, DType::F32, DType::F32, 0, 1},
                      {Op::Full, DType::F32, DType::F32, -1, -1, -1, 2, 2},
                      {Op::Add, DType::F32, DType::F32, 2, 3}}};
      if (op == Op::FusedMap)
        return {make_node(op, {src({3, 4}), src({3, 4})}, encode_fused_map(p), {3, 4}, DType::F32),
                make_node(op, {src({}), src({})}, encode_fused_map(p), {}, DType::F32)};
      FusedReduction r{Op::Sum, {0, 2}, {3, 4, 5}, {1, {{Op::Exp, DType::F32, DType::F32, 0}}}};
      return {make_node(op, {src({3, 4, 5})}, encode_fused_reduce(r), {4}, DType::F32)};
    }
    case OpKind::Window:
      if (op == Op::Correlate)
        return {node(op, {src({5, 6}), src({3, 3})}, {1, 1, 1, 1}, {5, 6}),
                node(op, {src({7}), src({3})}, {0, 0}, {5}),
                node(op, {src({4, 6}), src({3, 5})}, {1, 0, 1, 0}, {4, 2}, DType::F32)};
      if (op == Op::Conv2d)  // {sh, sw, ph, pw, dh, dw, groups}
        return {node(op, {src({2, 3, 8, 8}), src({4, 3, 3, 3})}, {1, 1, 1, 1, 1, 1, 1}, {2, 4, 8, 8}),
                node(op, {src({1, 4, 6, 6}), src({6, 2, 3, 3})}, {1, 1, 0, 0, 1, 1, 2}, {1, 6, 4, 4}),
                node(op, {src({1, 1, 8, 9}), src({2, 1, 3, 2})}, {3, 2, 0, 1, 1, 2, 1}, {1, 2, 2, 5})};
      // {kh, kw, sh, sw, ph, pw}
      return {node(op, {src({1, 2, 6, 6})}, {2, 2, 2, 2, 0, 0}, {1, 2, 3, 3}),
              node(op, {src({2, 1, 8, 7})}, {3, 2, 3, 1, 1, 1}, {2, 1, 3, 8})};
    case OpKind::Index: {  // attrs {dim, fn}; index and src i64 / f32
      const NodeRef i = src({3, 2}, DType::I64);
      if (op == Op::Gather)
        return {node(op, {src({3, 5}), i}, {1, 0}, {3, 2}), node(op, {src({4, 2}), i}, {0, 0}, {3, 2})};
      if (op == Op::Nonzero)
        return {node(op, {src({3, 4}, DType::Bool)}, {}, {5}, DType::I64),
                node(op, {src({}, DType::Bool)}, {}, {1}, DType::I64)};
      return {node(op, {src({3, 5}), i, src({3, 2})}, {1, 4}, {3, 5}),
              node(op, {src({6, 2}), i, src({3, 2})}, {0, 5}, {6, 2})};
    }
    case OpKind::Linalg: {
      // Outputs as builders_linalg.cpp makes them: batch dims, then the op's own (packed) dims.
      const NodeRef sq = src({3, 3}), bsq = src({2, 3, 3}), tall = src({4, 3}), btall = src({2, 4, 3});
      switch (op) {
        case Op::Solve:
          return {node(op, {sq, src({3, 2})}, {}, {3, 2}), node(op, {bsq, src({2, 3, 1})}, {}, {2, 3, 1})};
        case Op::Cholesky: return {node(op, {sq}, {}, {3, 3}), node(op, {bsq}, {}, {2, 3, 3})};
        case Op::Det: return {node(op, {sq}, {}, {}), node(op, {bsq}, {}, {2})};
        case Op::Slogdet: return {node(op, {sq}, {}, {2}), node(op, {bsq}, {}, {2, 2})};
        case Op::Qr: return {node(op, {tall}, {0}, {21}), node(op, {btall}, {1}, {2, 31})};
        case Op::Svd: return {node(op, {tall}, {1}, {24}), node(op, {btall}, {0}, {2, 3})};
        case Op::Eigh: return {node(op, {sq}, {1}, {12}), node(op, {bsq}, {0}, {2, 3})};
        case Op::CheckDeclared:  // {groups, (anti, k, dims)..., tile dims, tiles..., nonzero...}
          return {node(op, {sq}, {1, 0, 2, 0, 1, 0}, {3, 3}), node(op, {bsq}, {1, 1, 2, 1, 2, 0}, {2, 3, 3})};
        default: break;
      }
      break;
    }
    case OpKind::Line:  // {dim, reverse, indices, right}
      if (op == Op::Searchsorted)
        return {node(op, {src({6}), src({3, 4})}, {0, 0, 0, 0}, {3, 4}, DType::I64),
                node(op, {src({6}), src({})}, {0, 0, 0, 1}, {}, DType::I64)};
      if (op == Op::LineScatterAdd)
        return {node(op, {src({3, 4}), src({3, 4}, DType::I64)}, {1, 0, 0, 0}, {3, 4})};
      return {node(op, {src({3, 4, 5})}, {1, 0, 0, 0}, {3, 4, 5}), node(op, {src({7})}, {0, 1, 0, 0}, {7})};
    case OpKind::View: break;
  }
  if (op == Op::Reshape)
    return {node(op, {src({4, 6})}, {}, {2, 2, 6}), node(op, {src({2, 3})}, {}, {3, 2}),
            node(op, {src({6})}, {}, {1, 2, 3})};
  if (op == Op::Declare)
    return {node(op, {src({3, 3})}, {1, 0, 2, 0, 1, 0}, {3, 3}), node(op, {src({3, 3})}, {0, 0}, {3, 3}),
            node(op, {src({4, 3})}, {0, 2, 2, 2, 1, 0, 0, 1}, {4, 3})};
  if (op == Op::Constrain) return {node(op, {src({3, 4})}, {2, 1, 0}, {3, 4})};
  if (op == Op::Permute) return {node(op, {src({2, 3, 4})}, {2, 0, 1}, {4, 2, 3})};
  if (op == Op::Expand) return {node(op, {src({3, 1})}, {}, {2, 3, 4}), node(op, {src({})}, {}, {2, 2})};
  if (op == Op::Slice)
    return {node(op, {src({10, 8})}, {1, 2, 3, 2}, {3, 3}), node(op, {src({5})}, {4, 1}, {1})};
  FAIL("no sample for op ", d.name);
  return {};
}

// Inputs whose slice of the whole space may be a strict part of the tensor.
bool partial_input(Op op) {
  return op == Op::Slice || op == Op::Conv2d || op == Op::MaxPool2d || op == Op::AvgPool2d;
}

}  // namespace

TEST_CASE("engine.poly.signature.every_op_is_consistent") {
  int checked = 0;
  for (const OpDef& d : all_ops()) {
    for (const NodeRef& n : samples(d.op)) {
      CAPTURE(d.name);
      const Signature s = signature_of(*n);
      CAPTURE(to_string(s));
      CHECK(signature_problem(s) == "");
      REQUIRE(s.inputs.size() == n->inputs.size());
      const Box all = s.space_box();
      CHECK(s.output.shape == n->shape);
      CHECK(s.output_slice(all) == Box::of_shape(n->shape));
      for (size_t i = 0; i < s.inputs.size(); ++i) {
        CHECK(s.inputs[i].shape == n->inputs[i]->shape);
        CHECK(s.inputs[i].dtype == n->inputs[i]->dtype);
        const Box full = Box::of_shape(n->inputs[i]->shape);
        if (partial_input(d.op)) CHECK(full.contains(s.input_slice(i, all)));
        else CHECK(s.input_slice(i, all) == full);
      }
      // The space has one point per output element unless reduction dims add more.
      int64_t reduced = 1;
      for (const IndexDim& dim : s.space)
        if (dim.kind == IndexDim::Reduction) reduced *= dim.extent;
      if (d.op != Op::Reshape) CHECK(all.volume() == numel(n->shape) * reduced);
      CHECK(s.flops_per_point >= 0);
      ++checked;
    }
  }
  CHECK(checked >= 2 * kNumOps);
}

TEST_CASE("engine.poly.signature.matmul") {
  const Signature s = signature_of(*node(Op::Matmul, {src({2, 3, 4}), src({2, 4, 5})}, {}, {2, 3, 5}));
  CHECK(to_string(s) ==
        "space {b1:2, i:3, j:5, k:4 sum}; in1 (b1, i, k); in2 (b1, k, j); out (b1, i, j); "
        "2 flops/point");
  CHECK(s.combine() == CombineKind::Sum);
  const Box half_k({0, 0, 0, 0}, {1, 2, 4, 1});
  CHECK(s.splits_reduction(half_k));
  CHECK_FALSE(s.splits_reduction(s.space_box()));
  CHECK(s.input_slice(0, half_k) == Box({0, 0, 0}, {1, 2, 1}));
  CHECK(s.input_slice(1, half_k) == Box({0, 0, 0}, {1, 1, 4}));
  CHECK(s.output_slice(half_k) == Box::of_shape({2, 3, 5}));  // a partial of the whole output
}

TEST_CASE("engine.poly.signature.index_reads_the_indexed_dim_whole") {
  // gather along dim 2: the output (index's shape) splits freely, each block reading x's rows whole.
  Signature s = signature_of(*node(Op::Gather, {src({4, 9}), src({4, 3}, DType::I64)}, {1, 0}, {4, 3}));
  CHECK(s.space[0].splittable);
  CHECK(s.space[1].splittable);
  CHECK(s.input_slice(0, Box({1, 1}, {2, 1})) == Box({1, 0}, {2, 8}));
  CHECK(s.input_slice(1, Box({1, 1}, {2, 1})) == Box({1, 1}, {2, 1}));
  // scatter_add along dim 1: dim 1 is never split; index and src are read whole along it.
  s = signature_of(
      *node(Op::ScatterAdd, {src({6, 4}), src({3, 4}, DType::I64), src({3, 4})}, {0, 5}, {6, 4}));
  CHECK_FALSE(s.space[0].splittable);
  CHECK(s.space[1].splittable);
  CHECK(s.input_slice(0, Box({0, 2}, {5, 3})) == Box({0, 2}, {5, 3}));
  CHECK(s.input_slice(2, Box({0, 2}, {5, 3})) == Box({0, 2}, {2, 3}));
  // nonzero reads the whole mask into one block.
  s = signature_of(*node(Op::Nonzero, {src({3, 4}, DType::Bool)}, {}, {5}, DType::I64));
  CHECK_FALSE(s.space[0].splittable);
  CHECK(s.input_slice(0, Box({0}, {4})) == Box({0, 0}, {2, 3}));
}

TEST_CASE("engine.poly.signature.reductions") {
  Signature s = signature_of(*node(Op::Max, {src({3, 4, 5})}, {0, 2}, {4}));
  CHECK(to_string(s) == "space {d1:3 max, d2:4, d3:5 max}; in1 (d1, d2, d3); out (d2); 1 flops/point");
  s = signature_of(*node(Op::All, {src({3, 4}, DType::Bool)}, {1}, {3}, DType::Bool));
  CHECK(s.combine() == CombineKind::And);
  s = signature_of(*node(Op::Any, {src({3, 4}, DType::Bool)}, {0, 1}, {}, DType::Bool));
  CHECK(s.combine() == CombineKind::Or);
  CHECK(s.output.proj.tensor_rank() == 0);
  CHECK(s.output_slice(Box({1, 1}, {2, 2})) == Box::of_shape({}));
  s = signature_of(*node(Op::ArgMin, {src({3, 4})}, {}, {}, DType::I64));  // flat index
  CHECK(s.space[0].combine == CombineKind::ArgMin);
  CHECK(s.space[1].combine == CombineKind::ArgMin);
  s = signature_of(*node(Op::ArgMax, {src({3, 4})}, {0}, {4}, DType::I64));
  CHECK(s.space[0].kind == IndexDim::Reduction);
  CHECK(s.space[1].kind == IndexDim::Parallel);
  // The builder drops a reduction over no dims; a real one always keeps its reduced dims.
  NodeRef x = src({3, 4});
  CHECK(build::reduce(Op::Sum, x, {1}, true)->op == Op::Reshape);
}

TEST_CASE("engine.poly.signature.views") {
  // Permute {2,3,4} by {2,0,1}: output dim 0 is input dim 2, so input dim 2 <- d0.
  Signature s = signature_of(*node(Op::Permute, {src({2, 3, 4})}, {2, 0, 1}, {4, 2, 3}));
  CHECK(to_string(s.inputs[0].proj, s.dim_names()) == "(d2, d3, d1)");
  CHECK(s.input_slice(0, Box({1, 0, 2}, {3, 1, 2})) == Box({0, 2, 1}, {1, 2, 3}));
  // Slice start {1, 2}, step {3, 2}.
  s = signature_of(*node(Op::Slice, {src({10, 8})}, {1, 2, 3, 2}, {3, 3}));
  CHECK(to_string(s.inputs[0].proj, s.dim_names()) == "(3*d1+1, 2*d2+2)");
  CHECK(s.input_slice(0, Box({1, 0}, {1, 2})) == Box({4, 2}, {4, 6}));
  // Expand {3,1} -> {2,3,4}: the missing leading dim and the size-1 dim read coordinate 0.
  s = signature_of(*node(Op::Expand, {src({3, 1})}, {}, {2, 3, 4}));
  CHECK(to_string(s.inputs[0].proj, s.dim_names()) == "(d2, 0)");
  CHECK(s.input_slice(0, Box({1, 1, 1}, {1, 2, 3})) == Box({1, 0}, {2, 0}));
}

TEST_CASE("engine.poly.signature.cat_blocks_need_none_part_or_all") {
  const Signature s = signature_of(*node(Op::Cat, {src({2, 4}), src({3, 4}), src({1, 4})}, {0}, {6, 4}));
  CHECK(to_string(s.inputs[1].proj, s.dim_names()) == "(d1-2, d2) clipped");
  const Box rows_0_2({0, 0}, {2, 3});
  CHECK(s.input_slice(0, rows_0_2) == Box({0, 0}, {1, 3}));  // all of input 0
  CHECK(s.input_slice(1, rows_0_2) == Box({0, 0}, {0, 3}));  // its first row
  CHECK(s.input_slice(2, rows_0_2).empty());                 // none of input 2
}

TEST_CASE("engine.poly.signature.write_region_reads_the_value_only_inside_the_box") {
  const Signature s = signature_of(*node(Op::WriteRegion, {src({4, 5}), src({2, 3})}, {1, 2}, {4, 5}));
  CHECK(s.input_slice(1, Box({0, 0}, {0, 4})).empty());                 // row 0: no value
  CHECK(s.input_slice(1, Box({2, 0}, {3, 2})) == Box({1, 0}, {1, 0}));  // one corner of it
  CHECK(s.input_slice(0, Box({2, 0}, {3, 2})) == Box({2, 0}, {3, 2}));
}

TEST_CASE("engine.poly.signature.maps_and_generators") {
  NodeRef a = src({3, 4});
  const Signature add = signature_of(*build::binary(Op::Add, a, a));
  CHECK(to_string(add) == "space {d1:3, d2:4}; in1 (d1, d2); in2 (d1, d2); out (d1, d2); 1 flops/point");
  // Broadcasting is an explicit Expand node, so the map's input is still the identity.
  NodeRef row = src({4});
  NodeRef y = build::binary(Op::Mul, a, row);
  CHECK(y->inputs[1]->op == Op::Expand);
  CHECK(signature_of(*y).inputs[1].shape == Shape{3, 4});
  CHECK(signature_of(*build::unary(Op::Gelu, a)).flops_per_point >
        signature_of(*build::unary(Op::Exp, a)).flops_per_point);
  const Signature e = signature_of(*build::eye(3, 5, DType::F32));
  CHECK(e.inputs.empty());
  CHECK(e.extents() == Shape{3, 5});
  const Signature sc = signature_of(*src({}));
  CHECK(sc.rank() == 0);
  CHECK(sc.space_box().volume() == 1);
}

TEST_CASE("engine.poly.signature.problems_are_reported") {
  Signature s = signature_of(*node(Op::Matmul, {src({3, 4}), src({4, 5})}, {}, {3, 5}));
  Signature bad = s;
  bad.space[2].combine = CombineKind::None;
  CHECK(signature_problem(bad).find("reduction without a combine") != std::string::npos);
  bad = s;
  bad.output.proj.w[0] = 2;  // reaches row 3 of a 3-row output
  CHECK(signature_problem(bad).find("output") != std::string::npos);
  bad = s;
  bad.inputs[0].proj.A[1][2] = 0;       // input 0 would only ever read column 0
  CHECK(signature_problem(bad) == "");  // within the tensor: allowed (a slice does this)
  bad.inputs[0].proj.b[1] = 4;
  CHECK(signature_problem(bad).find("input 0") != std::string::npos);
}

TEST_CASE("engine.poly.signature.lines") {
  // A scan or sort keeps its line whole: that dim is never split, the others are free.
  Signature s = signature_of(*build::scan(Op::Cumsum, src({3, 4, 5}), 1));
  CHECK(s.space.size() == 3);
  CHECK(s.space[0].splittable);
  CHECK_FALSE(s.space[1].splittable);
  CHECK(s.space[2].splittable);
  CHECK(s.input_slice(0, Box({1, 0, 2}, {2, 3, 3})) == Box({1, 0, 2}, {2, 3, 3}));
  s = signature_of(*build::sort(src({6, 8}), 0, false)[1]);
  CHECK_FALSE(s.space[0].splittable);
  CHECK(s.space[1].splittable);
  CHECK(s.flops_per_point > signature_of(*build::scan(Op::Cumsum, src({6, 8}), 0)).flops_per_point);
  // Searchsorted: a block of values reads the whole sorted sequence.
  s = signature_of(*build::searchsorted(src({9}), src({4, 5}), false));
  CHECK(s.space[0].splittable);
  CHECK(s.space[1].splittable);
  CHECK(s.input_slice(0, Box({1, 2}, {2, 3})) == Box({0}, {8}));
  CHECK(s.input_slice(1, Box({1, 2}, {2, 3})) == Box({1, 2}, {2, 3}));
}
