// The alpha-beta cost of the collectives a plan uses, each the cheaper of its tree and ring forms.
//   Collective c = all_reduce_time(m.inter, 64, 4 << 20, m.mem_bytes_per_s);
//   c.time;  c.algorithm   // "ring": 2(p-1) messages of n/p beat 2 log2 p of n at 4 MiB
//   broadcast_time(link, p, n).time == ceil(log2 p) * link.time(n)   // small n: the binomial tree
// alpha is the link's latency, beta its seconds per byte, gamma the seconds per byte of merging
// two partials (memory speed). The formulas are those of Thakur, Rabenseifner and Gropp,
// "Optimization of Collective Communication Operations in MPICH" (2005), which Open MPI's tuned
// collectives also choose between by size: n bytes on p ranks,
//   binomial tree broadcast  ceil(log2 p) (alpha + n beta)
//   scatter + ring allgather (ceil(log2 p) + p - 1) alpha + 2 (p-1)/p n beta
//   binomial tree reduce     ceil(log2 p) (alpha + n beta + n gamma)
//   reduce-scatter + gather  2 ceil(log2 p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma  (Rabenseifner)
//   recursive-doubling all-reduce  ceil(log2 p) (alpha + n beta + n gamma)
//   ring all-reduce          2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma
//   ring reduce-scatter      (p-1) (alpha + n/p beta + n/p gamma)      (n: the whole input)
//   recursive halving        ceil(log2 p) alpha + (p-1)/p n (beta + gamma)   (p a power of two)
//   ring all-gather          (p-1) (alpha + n/p beta)                (n: everything gathered)
//   recursive-doubling all-gather  ceil(log2 p) alpha + (p-1)/p n beta       (p a power of two)
//   pairwise all-to-all      (p-1) alpha + n beta                    (n: the busiest rank's bytes)
//   Bruck all-to-all         ceil(log2 p) (alpha + n/2 beta)         (small messages)
#pragma once

#include "engine/plan/mesh.hpp"

namespace tapestry::plan {

struct Collective {
  double time = 0;             // s
  const char* algorithm = "";  // "tree", "ring", "rabenseifner", "halving", "local"
};

Collective broadcast_time(const Link& l, int p, double bytes);
Collective reduce_time(const Link& l, int p, double bytes, double merge_bytes_per_s);
Collective all_reduce_time(const Link& l, int p, double bytes, double merge_bytes_per_s);
// How long a broadcast keeps its root's link busy: the whole collective, whichever form
// broadcast_time chose, since the root sends in every round of both (the tree's ceil(log2 p)
// copies; the ring form's scatter and then its share of the ring all-gather). A root's broadcasts
// queue on its link one after another.
double broadcast_root_time(const Link& l, int p, double bytes);
// `bytes`: the whole input of each rank; each of the p ranks ends with bytes / p of the sum.
Collective reduce_scatter_time(const Link& l, int p, double bytes, double merge_bytes_per_s);
// `bytes`: everything gathered (every member ends with all of it).
Collective all_gather_time(const Link& l, int p, double bytes);
// `bytes`: what the busiest member sends or receives.
Collective all_to_all_time(const Link& l, int p, double bytes);

}  // namespace tapestry::plan
