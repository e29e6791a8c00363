#include "engine/poly/reshape.hpp"

#include "engine/ir/error.hpp"

namespace tapestry::poly {

namespace {
std::vector<int> non_unit_dims(const Shape& s) {
  std::vector<int> d;
  for (int i = 0; i < static_cast<int>(s.size()); ++i)
    if (s[i] != 1) d.push_back(i);
  return d;
}
}  // namespace

std::vector<ReshapeGroup> reshape_groups(const Shape& in, const Shape& out) {
  internal_check(numel(in) == numel(out));
  // Size-1 dims carry no data; without them every dim is >= 2, products grow strictly,
  // and the greedy walk closes each group at the first point where both sides agree.
  const std::vector<int> a = non_unit_dims(in), b = non_unit_dims(out);
  std::vector<ReshapeGroup> groups;
  size_t i = 0, o = 0;
  while (i < a.size() || o < b.size()) {
    internal_check(i < a.size() && o < b.size());
    ReshapeGroup g;
    int64_t pi = in[a[i]], po = out[b[o]];
    g.in_dims.push_back(a[i++]);
    g.out_dims.push_back(b[o++]);
    while (pi != po) {
      if (pi < po) {
        internal_check(i < a.size());
        pi *= in[a[i]];
        g.in_dims.push_back(a[i++]);
      } else {
        internal_check(o < b.size());
        po *= out[b[o]];
        g.out_dims.push_back(b[o++]);
      }
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

}  // namespace tapestry::poly
