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

Mesh Mesh::of_axes(std::vector<MeshAxis> axes) {
  internal_check(!axes.empty());
  int64_t ranks = 1;
  for (const MeshAxis& a : axes) {
    internal_check(a.size >= 1);
    ranks *= a.size;
  }
  internal_check(ranks <= (int64_t(1) << 30));
  Mesh m = modelled(static_cast<int>(ranks));
  // The legacy fields say the same: a node is everything inside the outermost axis.
  m.ranks_per_node = static_cast<int>(ranks / axes.front().size);
  m.inter = axes.front().link;
  m.intra = axes.size() > 1 ? axes.back().link : axes.front().link;
  m.axes = std::move(axes);
  return m;
}

const Link& Mesh::link(int from, int to) const {
  if (axes.empty()) return node_of(from) == node_of(to) ? intra : inter;
  // Row-major coordinates: the outermost axis whose coordinates differ carries the message.
  int stride = ranks;
  for (const MeshAxis& a : axes) {
    stride /= a.size;
    if ((from / stride) % a.size != (to / stride) % a.size) return a.link;
  }
  return axes.back().link;  // from == to: never moves, but the innermost is the cheapest
}

std::string Mesh::axes_string() const {
  std::string s;
  for (const MeshAxis& a : axes) s += cat_str(s.empty() ? "" : " x ", a.name, "=", a.size);
  return s;
}

double Mesh::compute_time(double flops, double bytes) const {
  return std::max(flops / flops_per_s, bytes / mem_bytes_per_s);
}

size_t Mesh::hash() const {
  size_t h = 0;
  auto mix = [&](double v) { h ^= std::hash<double>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (double v : {double(ranks), double(devices_per_rank), flops_per_s, mem_bytes_per_s, mem_bytes_per_rank,
                   double(ranks_per_node), intra.bandwidth, intra.latency, inter.bandwidth, inter.latency,
                   double(spill)})
    mix(v);
  for (const MeshAxis& a : axes) {
    h ^= std::hash<std::string>()(a.name) + (h << 6);
    for (double v : {double(a.size), a.link.bandwidth, a.link.latency}) mix(v);
  }
  return h;
}

std::string to_string(const Mesh& m) {
  if (!m.axes.empty()) {
    std::string links;
    for (const MeshAxis& a : m.axes)
      links += cat_str(links.empty() ? "" : ", ", a.link.bandwidth / 1e9, " GB/s ", a.link.latency * 1e6,
                       " us along ", a.name);
    return cat_str("mesh ", m.axes_string(), " (", m.ranks, " ranks), ", m.flops_per_s / 1e9, " GFLOP/s and ",
                   m.mem_bytes_per_rank / 1e9, " GB per rank; links ", links);
  }
  return cat_str("mesh of ", m.ranks, " ranks (", m.ranks_per_node, " per node), ", m.flops_per_s / 1e9,
                 " GFLOP/s and ", m.mem_bytes_per_rank / 1e9, " GB per rank; links ", m.intra.bandwidth / 1e9,
                 " GB/s ", m.intra.latency * 1e6, " us within a node, ", m.inter.bandwidth / 1e9, " GB/s ",
                 m.inter.latency * 1e6, " us between nodes");
}

}  // namespace tapestry::plan
