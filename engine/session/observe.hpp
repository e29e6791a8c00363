// The one entry point of an observation: computes the roots on the session's mesh.
//   observe_values(session, {y});   // one rank: the fusing evaluator; N ranks: fuse, plan, verify, run
// Every observation point (print, item, totable, tp.eval, pending tp.env bindings) comes here,
// so a script gives the same values whatever TAPESTRY_RANKS is. Named tensors stay sharded:
//   std::vector<NodeRef> leaves = observe_stored(session, {expr});   // tp.env.w = expr; no gather
// Each makes the session's telemetry current while it runs (its counters, trace, cancel flag).
#pragma once

#include <vector>

#include "engine/ir/node.hpp"

namespace tapestry {

class Session;

// Stored tensors among the roots (or expressions stored as one) are gathered to rank 0.
void observe_values(Session& s, const std::vector<NodeRef>& roots);

// tp.eval: computes the roots and leaves each result where it was computed. On one rank that
// is the node's value; on several, the node's stored leaf (its shards stay on the ranks that
// computed them, so a loop `u = tp.eval(step(u))` moves only what a step needs, not the
// whole state through rank 0). Stored tensors stay where they lie.
void observe_kept(Session& s, const std::vector<NodeRef>& roots);

// Computes `exprs` and keeps each value sharded where the plan computed it, in the ranks'
// shard stores (engine/store): returns, per expr, a stored leaf standing for its value (or
// the expr itself when it already holds a value or one rank computed it). On a throw no
// shard of the new values is left anywhere.
std::vector<NodeRef> observe_stored(Session& s, const std::vector<NodeRef>& exprs);

// tp.detach: observe_stored, and on a driver's job each new stored tensor's pieces get buddy
// replicas in the same request, as a tp.env binding's do. A detached value keeps no lineage once
// its inputs are rebound (an optimizer's step: the old parameters and moments die), so its
// replica must land before the request returns: then no moment exists in which a lost rank
// takes its only copy (docs/reliability.md, "Detached values").
std::vector<NodeRef> observe_detached(Session& s, const std::vector<NodeRef>& exprs);

// The roots as an observation plans them: every expression already computed and stored (a
// tp.eval result on several ranks, a named tensor) replaced by its stored leaf, which is read
// where it lies. tp.plan, tp.explain and :layout plan these, so they show what would run.
std::vector<NodeRef> as_observed(Session& s, const std::vector<NodeRef>& roots);

// Computes `expr` (no stored leaf in it is lost) on the session's mesh and keeps its value as
// the stored leaf `leaf`, under its key, where the plan put it: a tensor lost with a driver's
// MPI job computed again from its lineage (engine/session/recovery.hpp).
void recompute_stored(Session& s, const NodeRef& leaf, const NodeRef& expr);

// Computes the session's pending bindings. A binding that fails is dropped (its previous value
// stays); if its author is the one running now (Environment::author) the error is rethrown
// prefixed with its name, else it waits for its author (Environment::take_failures) and the
// others are computed all the same. Then writes the automatic checkpoint when it is due
// (engine/session/checkpoint.hpp).
void materialize(Session& s);

// Frees the shards of stored tensors no Tensor, binding or expression refers to any more.
void release_unreferenced(Session& s);

}  // namespace tapestry
