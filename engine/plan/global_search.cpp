#include "engine/plan/global_search.hpp"

#include <algorithm>
#include <cmath>

#include "engine/ir/error.hpp"

namespace tapestry::plan {

double total(const CostGraph& g, const std::vector<int>& pick) {
  double t = 0;
  for (size_t i = 0; i < g.node.size(); ++i) t += g.node[i][pick[i]];
  for (const CostGraph::Edge& e : g.edges) t += e.cost[pick[e.a] * g.node[e.b].size() + pick[e.b]];
  return t;
}

namespace {

// A table over some ops (ascending), row-major: the last op's candidate varies fastest.
struct Factor {
  std::vector<int> vars;
  std::vector<double> table;
};

size_t index_of(const Factor& f, const std::vector<int>& pick, const std::vector<int>& dom) {
  size_t k = 0;
  for (int v : f.vars) k = k * dom[v] + pick[v];
  return k;
}

// The choices of f's ops that its k-th entry is for, into pick.
void entry(const Factor& f, size_t k, const std::vector<int>& dom, std::vector<int>& pick) {
  for (size_t q = f.vars.size(); q-- > 0;) {
    pick[f.vars[q]] = static_cast<int>(k % dom[f.vars[q]]);
    k /= dom[f.vars[q]];
  }
}

// Best single-op changes until none lowers the sum (after an inexact elimination).
void improve(const CostGraph& g, std::vector<int>& pick) {
  std::vector<std::vector<int>> at(g.node.size());  // edges per op
  for (size_t e = 0; e < g.edges.size(); ++e) {
    at[g.edges[e].a].push_back(static_cast<int>(e));
    at[g.edges[e].b].push_back(static_cast<int>(e));
  }
  for (int round = 0; round < 100; ++round) {
    bool changed = false;
    for (size_t v = 0; v < g.node.size(); ++v) {
      int best = pick[v];
      double best_cost = INFINITY;
      for (size_t x = 0; x < g.node[v].size(); ++x) {
        double c = g.node[v][x];
        for (int e : at[v]) {
          const CostGraph::Edge& ed = g.edges[e];
          const size_t a = ed.a == int(v) ? x : pick[ed.a], b = ed.b == int(v) ? x : pick[ed.b];
          c += ed.cost[a * g.node[ed.b].size() + b];
        }
        if (c < best_cost) best_cost = c, best = static_cast<int>(x);
      }
      changed = changed || best != pick[v];
      pick[v] = best;
    }
    if (!changed) break;
  }
}

}  // namespace

GlobalChoice solve(const CostGraph& g, int64_t max_table) {
  const size_t n = g.node.size();
  std::vector<int> dom(n);
  for (size_t i = 0; i < n; ++i) {
    internal_check(!g.node[i].empty());
    dom[i] = static_cast<int>(g.node[i].size());
  }
  std::vector<Factor> factors;
  for (size_t i = 0; i < n; ++i) factors.push_back(Factor{{int(i)}, g.node[i]});
  for (const CostGraph::Edge& e : g.edges) {
    internal_check(e.a != e.b && e.cost.size() == size_t(dom[e.a]) * dom[e.b]);
    Factor f{{std::min(e.a, e.b), std::max(e.a, e.b)}, e.cost};
    if (e.a > e.b)  // stored as [cb * |a| + ca]
      for (int x = 0; x < dom[e.a]; ++x)
        for (int y = 0; y < dom[e.b]; ++y) f.table[y * dom[e.a] + x] = e.cost[x * dom[e.b] + y];
    factors.push_back(std::move(f));
  }
  std::vector<std::vector<int>> holding(n);  // live factors per op
  for (size_t f = 0; f < factors.size(); ++f)
    for (int v : factors[f].vars) holding[v].push_back(static_cast<int>(f));
  std::vector<char> gone(n, 0);
  std::vector<int> order;
  std::vector<std::vector<int>> bucket(n);  // the factors an op was eliminated from
  GlobalChoice out;
  auto scope_of = [&](int v) {
    std::vector<int> s;
    for (int f : holding[v])
      for (int u : factors[f].vars)
        if (u != v) s.push_back(u);
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    return s;
  };
  auto size_of = [&](int u) {
    double size = 1;
    for (int w : scope_of(u)) size *= dom[w];
    return size;
  };
  std::vector<double> sizes(n);  // of the table eliminating each op would build
  for (size_t u = 0; u < n; ++u) sizes[u] = size_of(static_cast<int>(u));
  std::vector<int> pick(n, 0);       // the choices a table entry stands for
  std::vector<size_t> base, stride;  // per factor of v's bucket: its entry for v = 0, v's step
  auto v_steps = [&](int v, const std::vector<int>& bk) {
    stride.assign(bk.size(), 1);
    for (size_t q = 0; q < bk.size(); ++q) {
      const std::vector<int>& vars = factors[bk[q]].vars;
      for (size_t t = vars.size(); t-- > 0 && vars[t] != v;) stride[q] *= dom[vars[t]];
    }
    base.resize(bk.size());
  };
  for (size_t step = 0; step < n; ++step) {
    // The op whose elimination builds the smallest table (a leaf or a chain link first).
    int v = -1;
    double v_size = INFINITY;
    for (size_t u = 0; u < n; ++u)
      if (!gone[u] && sizes[u] < v_size) v_size = sizes[u], v = static_cast<int>(u);
    const std::vector<int> neighbours = scope_of(v);
    gone[v] = 1;
    order.push_back(v);
    bucket[v] = holding[v];
    std::vector<Factor> made;
    if (v_size <= double(max_table)) {  // exact: one table over all of v's neighbours
      Factor f{neighbours, std::vector<double>(static_cast<size_t>(v_size), INFINITY)};
      const std::vector<int>& bk = bucket[v];
      v_steps(v, bk);
      for (size_t k = 0; k < f.table.size(); ++k) {
        entry(f, k, dom, pick);
        pick[v] = 0;
        for (size_t q = 0; q < bk.size(); ++q) base[q] = index_of(factors[bk[q]], pick, dom);
        for (int x = 0; x < dom[v]; ++x) {
          double c = 0;
          for (size_t q = 0; q < bk.size(); ++q) c += factors[bk[q]].table[base[q] + size_t(x) * stride[q]];
          f.table[k] = std::min(f.table[k], c);
        }
      }
      made.push_back(std::move(f));
    } else {  // too big: v is minimized out of each table on its own, a lower bound
      out.exact = false;
      for (int b : bucket[v]) {
        Factor f;
        for (int u : factors[b].vars)
          if (u != v) f.vars.push_back(u);
        size_t size = 1;
        for (int u : f.vars) size *= dom[u];
        f.table.assign(size, INFINITY);
        for (size_t k = 0; k < size; ++k) {
          entry(f, k, dom, pick);
          for (int x = 0; x < dom[v]; ++x) {
            pick[v] = x;
            f.table[k] = std::min(f.table[k], factors[b].table[index_of(factors[b], pick, dom)]);
          }
        }
        made.push_back(std::move(f));
      }
    }
    for (int b : bucket[v])
      for (int u : factors[b].vars)
        if (u != v) holding[u].erase(std::find(holding[u].begin(), holding[u].end(), b));
    holding[v].clear();
    for (Factor& f : made) {
      if (f.vars.empty()) continue;  // a constant: it changes no choice
      factors.push_back(std::move(f));
      for (int u : factors.back().vars) holding[u].push_back(static_cast<int>(factors.size() - 1));
    }
    for (int u : neighbours) sizes[u] = size_of(u);
  }
  // Back-substitution, last eliminated first: each op's best candidate given those after it.
  out.pick.assign(n, 0);
  for (size_t s = n; s-- > 0;) {
    const int v = order[s];
    double best = INFINITY;
    int arg = 0;
    for (int x = 0; x < dom[v]; ++x) {
      out.pick[v] = x;
      double c = 0;
      for (int b : bucket[v]) c += factors[b].table[index_of(factors[b], out.pick, dom)];
      if (c < best) best = c, arg = x;
    }
    out.pick[v] = arg;
  }
  if (!out.exact) improve(g, out.pick);
  out.cost = total(g, out.pick);
  return out;
}

// How many levels of readers a joint move carries down.
constexpr int kCascade = 3;

std::vector<JointMove> joint_moves(const CostGraph& g, const std::vector<int>& pick) {
  const size_t n = g.node.size();
  std::vector<std::vector<int>> at(n), readers(n);  // edges per op; the ops reading each op
  for (size_t e = 0; e < g.edges.size(); ++e) {
    at[g.edges[e].a].push_back(static_cast<int>(e));
    at[g.edges[e].b].push_back(static_cast<int>(e));
    readers[g.edges[e].a].push_back(g.edges[e].b);
  }
  std::vector<int> st = pick;
  auto edge_cost = [&](int e) {
    const CostGraph::Edge& ed = g.edges[e];
    return ed.cost[st[ed.a] * g.node[ed.b].size() + st[ed.b]];
  };
  auto own = [&](int u) {  // u's node and edges as st has them
    double c = g.node[u][st[u]];
    for (int e : at[u]) c += edge_cost(e);
    return c;
  };
  std::vector<JointMove> out;
  std::vector<int> responded, edges;
  for (size_t i = 0; i < n; ++i)
    for (size_t to = 0; to < g.node[i].size(); ++to) {
      if (int(to) == pick[i]) continue;
      st[i] = static_cast<int>(to);
      JointMove mv{0, {{int(i), int(to)}}};
      // Each reader's best response, in order; a reader that changes passes the move on to its
      // own readers, kCascade levels down (a stencil's or a layer's ops change together).
      responded.clear();
      std::vector<int> frontier{int(i)};
      for (int level = 0; level < kCascade && !frontier.empty(); ++level) {
        std::vector<int> next;
        for (int p : frontier)
          for (int u : readers[p]) {
            if (u == int(i) || std::find(responded.begin(), responded.end(), u) != responded.end()) continue;
            responded.push_back(u);
            int arg = st[u];
            double low = INFINITY;
            for (size_t x = 0; x < g.node[u].size(); ++x) {
              st[u] = static_cast<int>(x);
              const double c = own(u);
              if (c < low) low = c, arg = static_cast<int>(x);
            }
            st[u] = arg;
            if (arg != pick[u]) mv.change.push_back({u, arg}), next.push_back(u);
          }
        frontier = std::move(next);
      }
      // The change: the moved ops' nodes and every edge touching one of them, once each.
      edges.clear();
      for (auto [op, c] : mv.change) edges.insert(edges.end(), at[op].begin(), at[op].end());
      std::sort(edges.begin(), edges.end());
      edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
      double after = 0, before = 0;
      for (auto [op, c] : mv.change) after += g.node[op][c];
      for (int e : edges) after += edge_cost(e);
      st[i] = pick[i];
      for (int u : responded) st[u] = pick[u];
      for (auto [op, c] : mv.change) before += g.node[op][pick[op]];
      for (int e : edges) before += edge_cost(e);
      mv.delta = after - before;
      out.push_back(std::move(mv));
    }
  std::stable_sort(out.begin(), out.end(),
                   [](const JointMove& a, const JointMove& b) { return a.delta < b.delta; });
  return out;
}

}  // namespace tapestry::plan
