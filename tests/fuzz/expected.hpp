// What the single-rank reference expects of a fuzzed program, and how leniently each root of a
// sharded run is compared with it: split sums within their precision, products that may leave
// the finite range (or reassociated chains with a non-finite factor) only where both are finite.
// docs/reliability.md states every rule.
//   NaiveTally t;  std::string why;
//   const Expected want = reference(program, &t, &why);  // why: a naive-reference disagreement
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/program.hpp"

namespace tapestry::fuzz {

struct Expected {
  std::vector<std::vector<double>> values;
  std::vector<double> tol;
  std::vector<bool> overflow;  // compared only where both are finite (overflow_steps, expected.cpp)
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
};

// Nodes the naive per-op reference checked, and those of ops it does not cover.
struct NaiveTally {
  int64_t checked = 0, unsupported = 0;
};

// The single-rank evaluator over every step (so every node can be checked by the naive
// reference); returns the roots' values. With naive_failure, also checks every node against the
// naive reference (counting into tally) and a declared program against its undeclared twin,
// writing the first disagreement there. Throws what the evaluator throws.
Expected reference(const Program& p, NaiveTally* tally, std::string* naive_failure);

// Whether element i is finite; a complex number only when both its parts are (C99 Annex G:
// with one part infinite the other is meaningless), values interleaved real, imaginary.
bool finite_at(const std::vector<double>& v, size_t i, bool complex);

// The largest finite magnitude in v, at least 1: what a relative tolerance is scaled by.
double scale_of(const std::vector<double>& v);

}  // namespace tapestry::fuzz
