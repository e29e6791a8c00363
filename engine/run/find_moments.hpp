// The variance pairs the single-rank evaluator computes in one pass over x (cpu::run_moments).
//   find_moments(groups, pairs);   // pairs: {slot of sum(x), slot of sum((x - m)^2)}
#pragma once

#include <utility>
#include <vector>

#include "engine/plan/fusion_groups.hpp"

namespace tapestry {

// A variance as build::var makes it: s = sum(x) over trailing dims, m = s / c broadcast back
// (reshape, expand), then sum(square(x - m)) over the same dims, the square's group absorbed
// by that sum. Returns {s, the second sum} (as indices in g): both come from one pass over x
// (cpu::run_moments).
void find_moments(const plan::FusionGroups& g, std::vector<std::pair<int, int>>& out);

}  // namespace tapestry
