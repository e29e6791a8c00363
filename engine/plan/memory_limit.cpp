#include "engine/plan/memory_limit.hpp"

#include <algorithm>
#include <map>

#include "engine/ir/error.hpp"
#include "engine/plan/bands.hpp"
#include "engine/plan/peak_memory.hpp"
#include "engine/poly/signature.hpp"

namespace tapestry {

namespace {

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

void check_memory_limit(const plan::Plan& p, int64_t limit, bool out_of_core) {
  if (limit <= 0) return;
  const plan::ShardedGraph& g = p.graph();
  const plan::PeakMemory pm = plan::peak_memory(g, out_of_core);
  if (pm.bytes.empty()) return;
  const int64_t worst = pm.bytes[static_cast<size_t>(pm.worst)];
  if (worst <= limit) return;
  const Node* at = g.find(pm.op[static_cast<size_t>(pm.worst)]);
  throw Error(cat_str("the plan needs ", human(worst), " at once on rank ", pm.worst,
                      at ? cat_str(" (at its ", op_def(at->op).name, " ", shape_str(at->shape), ")") : "",
                      " but the memory budget (--memory-per-rank) is ", human(limit), " (", worst, " > ",
                      limit, " bytes), and no plan on this mesh fits it",
                      out_of_core ? cat_str(", not even in up to ", plan::kMaxBands, " bands per rank") : "",
                      "; it was not run. Use more ranks, "
                      "smaller pieces, or a higher limit"));
}

}  // namespace tapestry
