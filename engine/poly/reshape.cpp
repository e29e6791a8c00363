#include "engine/poly/reshape.hpp"

#include <algorithm>

#include "engine/ir/error.hpp"

namespace tapestry::poly {

namespace {

std::vector<int> non_unit_dims(const Shape& s) {
  std::vector<int> d;
  for (int i = 0; i < static_cast<int>(s.size()); ++i)
    if (s[i] != 1) d.push_back(i);
  return d;
}

std::vector<int64_t> prefix_products(const Shape& s, const std::vector<int>& dims) {
  std::vector<int64_t> p;
  int64_t acc = 1;
  for (int d : dims) p.push_back(acc *= s[d]);
  return p;
}

// Which factors [first, last] make up each dim, given the cut points (prefix products).
std::vector<std::pair<int, int>> runs(const std::vector<int64_t>& cuts, const std::vector<int64_t>& points) {
  std::vector<std::pair<int, int>> r;
  int first = 0;
  for (int64_t c : points) {
    const int last = static_cast<int>(std::find(cuts.begin(), cuts.end(), c) - cuts.begin());
    r.push_back({first, last});
    first = last + 1;
  }
  return r;
}

// The common refinement of one group: the merged cut points must form a divisibility chain.
void refine(ReshapeGroup& g, const Shape& in, const Shape& out) {
  const std::vector<int64_t> pi = prefix_products(in, g.in_dims), po = prefix_products(out, g.out_dims);
  std::vector<int64_t> cuts = pi;
  cuts.insert(cuts.end(), po.begin(), po.end());
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  int64_t prev = 1;
  std::vector<int64_t> factors;
  for (int64_t c : cuts) {
    if (c % prev != 0) return;  // {2,3} -> {3,2}: 3 is no multiple of 2
    factors.push_back(c / prev);
    prev = c;
  }
  g.factors = std::move(factors);
  g.in_runs = runs(cuts, pi);
  g.out_runs = runs(cuts, po);
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
    refine(g, in, out);
    groups.push_back(std::move(g));
  }
  return groups;
}

}  // namespace tapestry::poly
