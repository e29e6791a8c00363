// Contractions by index letters: einsum with a cost-chosen pairwise order, tensordot, outer.
//   NodeRef y = build::einsum("ij,jk,kl->il", {a, b, c});   // contracts (jk,kl) first
//   einsum::Path p = build::einsum_path("ij,jk,kl->il", {a, b, c});  // p.steps, p.flops
//   NodeRef z = build::tensordot(a, b, {1}, {0});           // = matmul for 2-D a, b
// einsum lowers at graph-build time to existing ops (diagonal slices, Sum, Permute, Reshape,
// Matmul, Mul): no kernel of its own, so the planner shards it as it shards those.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry::einsum {

// A parsed spec: one string of letters per operand, and the output letters (explicit after
// "->", else numpy's implicit output: the letters that appear once, in ASCII order).
struct Spec {
  std::vector<std::string> inputs;
  std::string output;
};

// Validates characters, the operand count and the output letters; spaces are ignored.
Spec parse(std::string_view spec, size_t n_operands);

using Sizes = std::map<char, int64_t>;  // size of every letter (after broadcasting)

// A pairwise contraction order in opt_einsum's convention: each step takes the tensors at
// positions (first < second, 0-based) of the current list, removes them and appends the
// result. Flops count a multiply-add as 2, as opt_einsum does.
struct Path {
  std::vector<std::pair<int, int>> steps;
  std::vector<std::string> step_specs;  // "jk,kl->jl" per step (filled by build::einsum_path)
  double naive_flops = 0;               // one loop nest over every letter at once
  double flops = 0;                     // following `steps`
  int64_t largest = 0;                  // elements of the largest intermediate
};

// Exhaustive dynamic programming over subsets (opt_einsum's "dp"/"optimal"): the cheapest
// order. Exponential: 3^n work, meant for n <= 6 operands.
Path optimal_path(const Spec& s, const Sizes& sizes);
// Each step contracts the pair that shrinks memory most (opt_einsum's "greedy"), then the
// cheaper one on ties: fast for any n, usually near the optimum.
Path greedy_path(const Spec& s, const Sizes& sizes);
// optimal_path for at most kOptimalMax operands, greedy_path beyond.
constexpr size_t kOptimalMax = 6;
Path choose_path(const Spec& s, const Sizes& sizes);
// The cost of a given order (steps as in Path), for tests and comparisons.
double path_flops(const Spec& s, const Sizes& sizes, const std::vector<std::pair<int, int>>& steps);
// The cost of evaluating the whole spec as one loop nest (numpy's optimize=False).
double naive_flops(const Spec& s, const Sizes& sizes);

}  // namespace tapestry::einsum

namespace tapestry::build {

// numpy's einsum: any number of operands, promoted to a common dtype as matmul does; a
// letter repeated in one operand takes its diagonal; sizes of 1 broadcast. Errors name the
// operand and the shapes ("operand 2 has 3 dims but 'ij' names 2").
NodeRef einsum(std::string_view spec, const std::vector<NodeRef>& operands);
// The order einsum would follow, with the flops of it and of the naive loop nest.
einsum::Path einsum_path(std::string_view spec, const std::vector<NodeRef>& operands);

// Sums a's dims da against b's dims db (0-based, pairwise equal sizes); the result has a's
// remaining dims, then b's, as numpy.tensordot.
NodeRef tensordot(const NodeRef& a, const NodeRef& b, const std::vector<int>& da, const std::vector<int>& db);
// numpy.outer: both operands flattened, result {numel(a), numel(b)}.
NodeRef outer(const NodeRef& a, const NodeRef& b);

}  // namespace tapestry::build
