// Matmul chains reassociated by cost: the planner orders a chain of matmuls as tp.einsum orders
// its pairwise contractions, whatever parentheses the user wrote.
//   Reassociated r = reassociate(roots, initial, mesh, opts);  // r.roots[i] computes roots[i]'s value
//   r.orders[k]    // chain k's bracketing as chosen; r.report: one line per chain
//   Reassociated same = reassociate_as(roots, initial, r.orders);   // replayed, nothing costed
// A chain is a tree of Matmul nodes whose inner products nobody else needs: each is read once, by
// a matmul of the chain, and is no root (observed, or a pending tp.env binding), not held, not
// stored. Anything between two matmuls ends the chain there, so a constrain on a product keeps
// the parentheses around it. A pure pass: the graph is immutable, the rewritten products are new
// nodes, and a chain left as written keeps its original nodes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/plan/search.hpp"

namespace tapestry::plan {

// A full bracketing of n operands, preorder: for each product over operands [lo, hi] (0-based),
// the last operand s of its left factor [lo, s]; the right factor is [s + 1, hi]. n - 1 entries.
// ((x1 x2) x3) is {1, 0}, (x1 (x2 x3)) is {0, 1}.
using Bracketing = std::vector<int>;

// "((x1 x2) x3)"
std::string bracketing_string(const Bracketing& b, int n);

// Every bracketing of n operands (Catalan(n - 1) of them: 2 for 3, 5 for 4, 14 for 5).
std::vector<Bracketing> bracketings(int n);

// The bracketing of n operands with the least sum of step(lo, s, hi), the cost of multiplying
// product [lo, s] by product [s + 1, hi]: dynamic programming over the chain, O(n^3) steps.
// Ties go to the smaller s, so the same costs give the same order.
Bracketing cheapest(int n, const std::function<double(int, int, int)>& step);

struct Chain {
  NodeRef root;                 // the chain's last matmul
  std::vector<NodeRef> leaves;  // its operands, left to right
  Bracketing written;           // the user's parentheses
};

// Whether the roots may need a chain: a matmul reading a matmul that holds no value. Allocates
// nothing and stops early, so an observation without one (a CG step) pays almost nothing; past a
// few hundred nodes it answers true and find_chains decides.
bool may_have_chains(const std::vector<NodeRef>& roots);

// The chains of the graph the roots need (observed_subgraph), in topological order of their roots;
// only chains of three operands or more.
std::vector<Chain> find_chains(const std::vector<NodeRef>& roots, const std::vector<Shard>& initial);

struct Reassociated {
  std::vector<NodeRef> roots;       // roots[i] computes the value of the given roots[i]
  std::vector<Bracketing> orders;   // per chain of find_chains: the order chosen
  int changed = 0;                  // chains computed in another order than written
  std::vector<std::string> report;  // per chain: written and chosen orders, what each costs
};

// An order replaces the written one only where it is at least this much cheaper: reassociating
// changes rounding, which nothing is worth that the model cannot tell apart from noise.
inline constexpr double kReassociateGain = 0.02;
// The joint costing (each order planned by the global stage over the whole graph) stops past
// this many ops costed in all; the chains left are ordered by their own ops' estimates.
inline constexpr int64_t kReassociateWork = 2'500;
// Chains of up to this many operands have every order costed jointly (14 orders); longer ones
// the written order, the fewest flops and the cheapest by their own ops' estimates.
inline constexpr int kAllOrdersUpTo = 5;

// What the whole graph computing `roots` costs once planned: the search's plan time (the
// pipeline plans through its plan cache, so the winner's plan is then a hit).
using PlannedCost = std::function<double(const std::vector<NodeRef>& roots)>;

// Chooses each chain's order by the planner's cost on mesh m (opt.reassociate false: none).
// On one rank an order costs the sum of its matmuls' estimates (nothing moves, so that is the
// whole difference between two plans). On more ranks each order is planned with the rest of the
// graph by the global stage of the search (estimate.hpp: the optimum of the estimate's node and
// edge costs, sharding chosen jointly with the order); with `planned`, the written order and the
// kFinalists best of the others by that stage are then planned whole by the search, and the
// fastest plan wins (the refinement can turn the global stage's ranking round). Chains are taken
// one after another, each costed with the orders already chosen for those before it.
// explain false leaves r.report empty (an evaluation on one rank never shows it, and formatting
// its numbers costs more than choosing the order).
inline constexpr int kFinalists = 2;
Reassociated reassociate(const std::vector<NodeRef>& roots, const std::vector<Shard>& initial, const Mesh& m,
                         const SearchOptions& opt, const PlannedCost& planned = {}, bool explain = true);

// The same rewrite with the orders given (one per chain of find_chains), costing nothing: a
// plan-cache hit replays what the first planning chose.
Reassociated reassociate_as(const std::vector<NodeRef>& roots, const std::vector<Shard>& initial,
                            const std::vector<Bracketing>& orders);

}  // namespace tapestry::plan
