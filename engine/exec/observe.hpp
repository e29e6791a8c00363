// The one entry point of an observation: computes the roots on the current mesh.
//   observe_values({y});   // one rank: the fusing evaluator; N ranks: fuse, plan, verify, run
// Every observation point (print, item, totable, tp.eval, pending tp.env bindings) comes here,
// so a script gives the same values whatever TAPESTRY_RANKS is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry {

void observe_values(const std::vector<NodeRef>& roots);

// How the value of node `id` was split when a sharded observation computed it
// ("split(1, 4)", "replicated", "grid{2,2}"); "" when it was computed on one rank.
std::string computed_layout(uint64_t node_id);

}  // namespace tapestry
