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

// One instruction of a map program: registers 0..L-1 are the leaves, instruction j writes
// register L + j, and the last instruction is the result. The same struct everywhere a map
// program exists: fused nodes' attributes, the CPU and CUDA map kernels, every backend.
struct MapInstr {
  Op op = Op::Full;  // a Map-kind op, or Op::Full for a constant
  DType out = DType::F32;
  DType in = DType::F32;       // Cast: the source; Where: of a and b; Full: = out
  int a = -1, b = -1, c = -1;  // operand registers (Where: a = cond, b = then, c = else)
  double real = 0;             // Full: the value for float dtypes
  int64_t integer = 0;         // Full: the value for integer / bool dtypes
  bool operator==(const MapInstr&) const = default;
};

// A map program over leaves of some kind: host Views (cpu::MapProgram), device views
// (DeviceMapProgram), the CUDA kernels' views. Each leaf has the output's shape (strides may be 0).
template <class Leaf> struct MapProgramOf {
  std::vector<Leaf> leaves;
  std::vector<MapInstr> instrs;
  // The output is a piece of a tensor far larger than the caches (a band of it): write it with
  // streaming stores as a whole output of that size would be (the kernel decides alone otherwise).
  bool stream_out = false;
};

// A fused node's program without its leaves (they are the node's inputs).
struct FusedProgram {
  int num_leaves = 0;
  std::vector<MapInstr> instrs;
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
