// The single-rank evaluator: computes the subgraph the roots need, fusing maps.
//   evaluate({y});              // y->value now holds the data; nothing else is kept
//   request_cancel();           // from a signal handler: the next kernel boundary throws
// Nodes that already hold a value are leaves; nodes no root needs are never run.
#pragma once

#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry {

// Materializes every root (sets root->value to a contiguous buffer).
// Throws Error on a user-visible failure (out of memory), Cancelled on Ctrl-C;
// on any throw no root is changed.
void evaluate(const std::vector<NodeRef>& roots);

// Async-signal-safe: asks the running evaluation to stop at the next kernel boundary.
void request_cancel();
void clear_cancel();
// Whether a cancel was requested and not cleared (the sharded executor checks it between steps).
bool cancel_requested();

}  // namespace tapestry
