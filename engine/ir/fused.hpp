// The attrs of fused nodes: a map program carried by a FusedMap or FusedReduce node.
//   Attrs a = encode_fused_map(prog);            // prog.instrs over prog.num_leaves leaves
//   FusedProgram p = decode_fused_map(*n);       // n->op == Op::FusedMap, checked
//   describe_fused(*n) == "tanh(x0 * x1 + x2)"   // for tp.plan: leaves are x0, x1, ...
// Fusion (engine/plan/fuse.hpp) makes these nodes; the encoding lives here, in the IR, because
// signatures (engine/poly), the planner and the executor all read it. Layout in Attrs:
//   FusedMap: inputs = the group's leaves, all of the output's shape; ints = {n_instr, then per
//     instruction: op, out dtype, in dtype, a, b, c, integer}, reals = {real per instruction}
//   FusedReduce: ints = {reduce op, rank, program shape..., n_dims, dims..., then FusedMap's
//     ints}, reals as FusedMap; the program (over the leaves) is reduced over dims
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry {

// One instruction, field for field cpu::MapInstr: register r < num_leaves is leaf r, register
// num_leaves + j the result of instrs[j]; the last instruction is the program's result.
struct FusedInstr {
  Op op = Op::Full;    // a Map-kind op, or Op::Full for a constant
  DType out = DType::F32;
  DType in = DType::F32;  // Cast: the source; Where: of a and b; Full: = out
  int a = -1, b = -1, c = -1;
  double real = 0;       // Full: the value for float dtypes
  int64_t integer = 0;   // Full: the value for integer / bool dtypes
  bool operator==(const FusedInstr&) const = default;
};

struct FusedProgram {
  int num_leaves = 0;
  std::vector<FusedInstr> instrs;
  bool operator==(const FusedProgram&) const = default;
};

// A FusedReduce: the program, evaluated over `shape`, reduced by `op` over `dims`.
struct FusedReduction {
  Op op = Op::Sum;        // Sum, Prod, Max, Min, All, Any
  std::vector<int> dims;  // 0-based ascending
  Shape shape;            // the program's (and every leaf's) shape
  FusedProgram program;
};

Attrs encode_fused_map(const FusedProgram& p);
Attrs encode_fused_reduce(const FusedReduction& r);

// Decode and check (internal errors: only fusion makes these nodes). num_leaves = inputs.size().
FusedProgram decode_fused_map(const Node& n);
FusedReduction decode_fused_reduce(const Node& n);

// The program of a fused node as an expression over leaves x0, x1, ...; a FusedReduce reads
// "sum(x0 * x1; dims 2)" with 1-based dims, as the user wrote them. Long subexpressions are
// cut with "..." so a deep DAG cannot blow the text up.
std::string describe_fused(const Node& n);

}  // namespace tapestry
