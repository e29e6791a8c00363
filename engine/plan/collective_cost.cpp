#include "engine/plan/collective_cost.hpp"

#include <cmath>

namespace tapestry::plan {

namespace {

double rounds(int p) { return std::ceil(std::log2(static_cast<double>(p))); }

Collective cheaper(Collective a, Collective b) { return b.time < a.time ? b : a; }

}  // namespace

Collective broadcast_time(const Link& l, int p, double n) {
  if (p <= 1 || n <= 0) return {0.0, "local"};
  const double beta = 1 / l.bandwidth, a = l.latency;
  const Collective tree{rounds(p) * (a + n * beta), "tree"};
  const Collective ring{(rounds(p) + p - 1) * a + 2.0 * (p - 1) / p * n * beta, "ring"};
  return cheaper(tree, ring);
}

// The root sends in every round of both forms: the tree's ceil(log2 p) copies, and in the ring
// form its scatter ((p-1)/p n) and then its share of the ring all-gather ((p-1)/p n more: its own
// piece, which no other member holds, and the pieces it passes on). Charging it only the scatter
// let a root send less than the n bytes its members lack and it alone holds, so broadcasting a
// band to two readers looked cheaper for the root than sending it to one.
double broadcast_root_time(const Link& l, int p, double n) { return broadcast_time(l, p, n).time; }

Collective reduce_time(const Link& l, int p, double n, double merge) {
  if (p <= 1) return {0.0, "local"};
  const double beta = 1 / l.bandwidth, gamma = 1 / merge, a = l.latency, f = double(p - 1) / p;
  const Collective tree{rounds(p) * (a + n * beta + n * gamma), "tree"};
  const Collective rab{2 * rounds(p) * a + 2 * f * n * beta + f * n * gamma, "rabenseifner"};
  return cheaper(tree, rab);
}

Collective all_reduce_time(const Link& l, int p, double n, double merge) {
  if (p <= 1) return {0.0, "local"};
  const double beta = 1 / l.bandwidth, gamma = 1 / merge, a = l.latency, f = double(p - 1) / p;
  const Collective tree{rounds(p) * (a + n * beta + n * gamma), "tree"};
  const Collective ring{2.0 * (p - 1) * a + 2 * f * n * beta + f * n * gamma, "ring"};
  return cheaper(tree, ring);
}

Collective reduce_scatter_time(const Link& l, int p, double n, double merge) {
  if (p <= 1) return {0.0, "local"};
  const double beta = 1 / l.bandwidth, gamma = 1 / merge, a = l.latency, f = double(p - 1) / p;
  const Collective ring{(p - 1) * (a + n / p * (beta + gamma)), "ring"};
  if ((p & (p - 1)) != 0) return ring;
  return cheaper(ring, {rounds(p) * a + f * n * (beta + gamma), "halving"});
}

Collective all_gather_time(const Link& l, int p, double n) {
  if (p <= 1 || n <= 0) return {0.0, "local"};
  const double beta = 1 / l.bandwidth, a = l.latency;
  const Collective ring{(p - 1) * (a + n / p * beta), "ring"};
  if ((p & (p - 1)) != 0) return ring;
  return cheaper(ring, {rounds(p) * a + double(p - 1) / p * n * beta, "doubling"});
}

Collective all_to_all_time(const Link& l, int p, double n) {
  if (p <= 1 || n <= 0) return {0.0, "local"};
  const double beta = 1 / l.bandwidth, a = l.latency;
  const Collective pairwise{(p - 1) * a + n * beta, "pairwise"};
  return cheaper(pairwise, {rounds(p) * (a + n / 2 * beta), "bruck"});
}

}  // namespace tapestry::plan
