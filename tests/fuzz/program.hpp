// A fuzz program: a list of steps, each one tp API call, that builds an expression graph both
// through the C++ builders and as a Lua script using the tp API (the reproducer).
//   Program p = generate(rng, {});                 // random, well-typed (builders validate)
//   std::vector<NodeRef> nodes = build(p);         // one node per step; throws Error if invalid
//   std::string lua = to_lua(p, p.roots, expected);  // a self-checking Lua reproducer
// Steps refer to earlier steps by index, so dropping or replacing a step (minimization) only
// needs a rebuild: a step whose operands no longer fit makes build() throw, and the shrink
// that caused it is undone.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry::fuzz {

enum class Kind {
  Src,
  Full,
  Arange,
  Rand,
  Eye,
  Unary,
  Binary,
  BinaryScalar,
  Where,
  Cast,
  Reduce,
  Mean,
  ArgReduce,
  Matmul,
  Einsum,
  Reshape,
  Permute,
  Expand,
  Slice,
  Narrow,
  Select,
  Cat,
  Pad,
  Roll,
  Stencil,
  Conv2d,
  Pool,
  Constrain,
  WriteRegion,
  Line,   // sort, argsort, the scans (op; n: dim; a: {descending}; flag: indices)
  Index,  // gather, scatter, scatter_add: a: index shape, b: its 1-based values, n: dim
  // x + x^T (flag: x - x^T) in dims a[0], a[1], declared symmetric (antisymmetric) and kept as
  // a named tensor keeps it: unpack(pack(.)), so later steps take the packed paths
  // (docs/properties.md). With declarations off (set_declarations), just x +- x^T.
  // n = 1: block-sparse instead: x zeroed outside the tiles b marks (a: tile extents per dim),
  // declared so and kept packed alike.
  Declare,
};

struct Step {
  Kind kind = Kind::Src;
  Op op = Op::Source;
  std::vector<int> in;     // earlier steps
  std::vector<int64_t> a;  // shape, dims, starts... (meaning per kind: program.cpp)
  std::vector<int64_t> b;  // second list (steps, counts, after-pads...)
  std::vector<int64_t> c;  // third list (conv/pool options)
  double v = 0;            // scalar value
  int64_t n = 0;           // seed, dim, shift, mode...
  DType dt = DType::F32;
  bool flag = false;  // keepdim, has-dim...
  std::string spec;   // einsum
};

struct Program {
  std::vector<Step> steps;
  std::vector<int> roots;  // observed steps
};

struct GenOptions {
  int max_steps = 16;
  int64_t max_dim = 13;  // sizes drawn from 1, primes and small composites up to this
};

// A random program of up to max_steps steps whose every step builds (invalid draws are
// retried), with 1..3 roots among the last steps.
Program generate(std::mt19937_64& rng, const GenOptions& o);

// Builds one step over the nodes of its inputs; throws tapestry::Error when it is not valid.
NodeRef build_step(const Step& s, const std::vector<NodeRef>& inputs);

// Builds every step in order; throws tapestry::Error when a step is not valid.
std::vector<NodeRef> build(const Program& p);

// The steps a set of roots needs, renumbered (dead steps dropped).
Program prune(const Program& p);

// A Lua script (run by tapestry) that builds the program with the tp API and checks each root
// against `expected` (flat row-major values; tol 0 = exact, else relative to the root's
// largest magnitude; where `overflow` is set for a root, an element either side holds
// non-finite is not compared). `header` goes into the opening comment.
std::string to_lua(const Program& p, const std::vector<std::vector<double>>& expected,
                   const std::vector<double>& tol, const std::string& header,
                   const std::vector<bool>& overflow = {});

// The deterministic values of a Src step (quarters in [-2, 2]; ints in [-8, 8]; bools).
double source_value(int64_t i, int64_t seed, DType dt);

const char* kind_name(Kind k);

// Whether Declare steps declare (default) or build the same values undeclared: the fuzzer
// compares the two, which checks every rewrite that exploits declared properties.
void set_declarations(bool on);
bool has_declare(const Program& p);

// Whether a step's float result may round differently when sharded (split sums, FFTW's
// alignment-dependent codelets, scans in chunks): compared with a tolerance, not bit for bit.
bool reorders(const Step& s, DType out);

}  // namespace tapestry::fuzz
