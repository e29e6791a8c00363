// The single-rank evaluator: computes the subgraph the roots need, fusing maps.
//   evaluate({y});              // y->value now holds the data
//   request_cancel();           // engine/telemetry/cancel.hpp: the next kernel boundary throws
// Nodes that already hold a value are leaves; nodes no root needs are never run. Besides the
// roots, only a node with inputs that a HeldNode refers to (a Lua Tensor) and that was
// materialized anyway, into a buffer of its own of at most 1 MiB, keeps its value (released by
// node.hpp's rule); fused-away intermediates never exist as buffers.
#pragma once

#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry {

// Materializes every root (sets root->value to a contiguous buffer), and keeps the value of
// the small held nodes it computed (above).
// Throws Error on a user-visible failure (out of memory), Cancelled on Ctrl-C;
// on any throw no root is changed.
void evaluate(const std::vector<NodeRef>& roots);

}  // namespace tapestry
