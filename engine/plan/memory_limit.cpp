#include "engine/plan/memory_limit.hpp"

#include <algorithm>
#include <map>

#include "engine/ir/error.hpp"
#include "engine/poly/signature.hpp"

namespace tapestry {

namespace {

int64_t bytes_of(const Node& n, const poly::Box& box) {
  int64_t e = box.empty() ? 0 : numel(box.extents());
  for (size_t d = static_cast<size_t>(box.rank()); d < n.shape.size(); ++d) e *= n.shape[d];
  return e * static_cast<int64_t>(dtype_size(n.dtype));
}

std::string human(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

}  // namespace

void check_memory_limit(const plan::Plan& p, int64_t limit) {
  if (limit <= 0) return;
  const plan::ShardedGraph& g = p.graph();
  // Per rank, as the cost model counts it: held, received, computed and combined bytes.
  std::vector<int64_t> need(static_cast<size_t>(g.num_ranks), 0);
  for (const plan::Shard& h : g.initial)
    if (const Node* n = g.find(h.tensor)) need[h.rank] += bytes_of(*n, h.box);
  for (const plan::Transfer& t : g.transfers)
    if (const Node* n = g.find(t.tensor)) need[t.to] += bytes_of(*n, t.slice);
  for (const plan::Block& b : g.blocks)
    if (const Node* n = g.find(b.node))
      need[b.rank] += bytes_of(*n, poly::signature_of(*n).output_slice(b.box));
  for (const plan::Combine& c : g.combines)
    if (const Node* n = g.find(c.node))
      for (plan::Rank d : c.dest) need[d] += bytes_of(*n, c.out);
  const auto worst = std::max_element(need.begin(), need.end());
  if (worst == need.end() || *worst <= limit) return;
  throw Error(cat_str("the plan needs ", human(*worst), " on rank ", worst - need.begin(),
                      " but the memory budget (--memory-per-rank) is ", human(limit), " (", *worst, " > ",
                      limit, " bytes); it was not run. Use more ranks, ",
                      "smaller pieces, or a higher limit"));
}

}  // namespace tapestry
