#include "engine/plan/mesh.hpp"

#include <algorithm>
#include <functional>

#include "engine/ir/error.hpp"

namespace tapestry::plan {

Mesh Mesh::modelled(int ranks) {
  internal_check(ranks >= 1);
  Mesh m;
  m.ranks = ranks;
  return m;
}

Mesh Mesh::this_machine(int ranks) {
  Mesh m = modelled(ranks);
  m.ranks_per_node = ranks;
  return m;
}

double Mesh::compute_time(double flops, double bytes) const {
  return std::max(flops / flops_per_s, bytes / mem_bytes_per_s);
}

size_t Mesh::hash() const {
  size_t h = 0;
  auto mix = [&](double v) { h ^= std::hash<double>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (double v : {double(ranks), double(devices_per_rank), flops_per_s, mem_bytes_per_s, mem_bytes_per_rank,
                   double(ranks_per_node), intra.bandwidth, intra.latency, inter.bandwidth, inter.latency})
    mix(v);
  return h;
}

std::string to_string(const Mesh& m) {
  return cat_str("mesh of ", m.ranks, " ranks (", m.ranks_per_node, " per node), ", m.flops_per_s / 1e9,
                 " GFLOP/s and ", m.mem_bytes_per_rank / 1e9, " GB per rank; links ", m.intra.bandwidth / 1e9,
                 " GB/s ", m.intra.latency * 1e6, " us within a node, ", m.inter.bandwidth / 1e9, " GB/s ",
                 m.inter.latency * 1e6, " us between nodes");
}

}  // namespace tapestry::plan
