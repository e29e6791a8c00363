#include "engine/plan/reassociate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/error.hpp"
#include "engine/plan/estimate.hpp"
#include "engine/plan/planner.hpp"

namespace tapestry::plan {

namespace {

void bracket_string(const Bracketing& b, size_t& at, int lo, int hi, std::string& out) {
  if (lo == hi) {
    out += cat_str("x", lo + 1);
    return;
  }
  const int s = b[at++];
  out += "(";
  bracket_string(b, at, lo, s, out);
  out += " ";
  bracket_string(b, at, s + 1, hi, out);
  out += ")";
}

void all_brackets(int lo, int hi, std::vector<Bracketing>& out) {
  out.clear();
  if (lo == hi) {
    out.push_back({});
    return;
  }
  for (int s = lo; s < hi; ++s) {
    std::vector<Bracketing> left, right;
    all_brackets(lo, s, left);
    all_brackets(s + 1, hi, right);
    for (const Bracketing& l : left)
      for (const Bracketing& r : right) {
        Bracketing b{s};
        b.insert(b.end(), l.begin(), l.end());
        b.insert(b.end(), r.begin(), r.end());
        out.push_back(std::move(b));
      }
  }
}

// The sum of step over the products of b.
double sum_of(const Bracketing& b, size_t& at, int lo, int hi,
              const std::function<double(int, int, int)>& step) {
  if (lo == hi) return 0;
  const int s = b[at++];
  const double l = sum_of(b, at, lo, s, step);
  const double r = sum_of(b, at, s + 1, hi, step);
  return l + r + step(lo, s, hi);
}

double sum_of(const Bracketing& b, int n, const std::function<double(int, int, int)>& step) {
  size_t at = 0;
  return sum_of(b, at, 0, n - 1, step);
}

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }
Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// x broadcast to `shape` (an Expand), or x itself when it has that shape.
NodeRef expanded(const NodeRef& x, const Shape& shape) {
  return x->shape == shape ? x : make_node(Op::Expand, {x}, Attrs{}, shape, x->dtype);
}

// The product x @ y of two operands whose batch dims broadcast (each a broadcast of the chain's).
NodeRef product(const NodeRef& x, const NodeRef& y) {
  const Shape batch = broadcast_shapes(batch_of(x->shape), batch_of(y->shape));
  const int64_t rows = x->shape[x->shape.size() - 2], inner = x->shape.back(), cols = y->shape.back();
  return make_node(
      Op::Matmul,
      {expanded(x, with_matrix(batch, rows, inner)), expanded(y, with_matrix(batch, inner, cols))}, Attrs{},
      with_matrix(batch, rows, cols), x->dtype);
}

NodeRef build(const std::vector<NodeRef>& ops, const Bracketing& b, size_t& at, int lo, int hi) {
  if (lo == hi) return ops[static_cast<size_t>(lo)];
  const int s = b[at++];
  NodeRef l = build(ops, b, at, lo, s);
  NodeRef r = build(ops, b, at, s + 1, hi);
  return product(l, r);
}

// What a chain's operands are multiplied as when its order changes: an operand that only
// broadcasts a matrix over the batch (x{B,n,k} @ w{k,m} makes Expand(w) to {B,k,m}) enters as the
// matrix itself, so w1 @ w2 in x @ (w1 @ w2) is one matmul, broadcast once, not B of them.
NodeRef base_of(const NodeRef& leaf, const std::unordered_set<uint64_t>& held) {
  if (leaf->op != Op::Expand || leaf->value || held.count(leaf->id)) return leaf;
  const NodeRef& x = leaf->inputs[0];
  const size_t r = x->shape.size(), lr = leaf->shape.size();
  if (r < 2 || x->shape[r - 1] != leaf->shape[lr - 1] || x->shape[r - 2] != leaf->shape[lr - 2]) return leaf;
  return x;
}

std::unordered_set<uint64_t> held_ids(const std::vector<Shard>& initial) {
  std::unordered_set<uint64_t> held;
  for (const Shard& h : initial) held.insert(h.tensor);
  return held;
}

// The graph with each chain in its order (orders[k] for chains[k]); a chain in its written order
// keeps its nodes. Every other node whose inputs changed is made again over the new inputs.
std::vector<NodeRef> rewrite(const std::vector<NodeRef>& roots, const std::vector<NodeRef>& topo,
                             const std::vector<Chain>& chains, const std::vector<Bracketing>& orders,
                             const std::unordered_set<uint64_t>& held) {
  std::unordered_map<const Node*, size_t> chain_at;  // reordered chains, by root
  std::unordered_set<const Node*> dissolved;         // their inner products
  for (size_t k = 0; k < chains.size(); ++k) {
    if (orders[k] == chains[k].written) continue;
    chain_at[chains[k].root.get()] = k;
    std::vector<const Node*> stack{chains[k].root.get()};
    std::unordered_set<const Node*> leaves;
    for (const NodeRef& l : chains[k].leaves) leaves.insert(l.get());
    while (!stack.empty()) {
      const Node* x = stack.back();
      stack.pop_back();
      if (leaves.count(x)) continue;
      if (x != chains[k].root.get()) dissolved.insert(x);
      for (const NodeRef& in : x->inputs) stack.push_back(in.get());
    }
  }
  std::unordered_map<const Node*, NodeRef> now;
  auto get = [&](const NodeRef& x) -> NodeRef {
    auto it = now.find(x.get());
    return it == now.end() ? x : it->second;
  };
  for (const NodeRef& n : topo) {
    if (n->value || dissolved.count(n.get())) continue;
    if (auto c = chain_at.find(n.get()); c != chain_at.end()) {
      const Chain& ch = chains[c->second];
      std::vector<NodeRef> ops;
      for (const NodeRef& l : ch.leaves) ops.push_back(base_of(get(l), held));
      size_t at = 0;
      now[n.get()] =
          expanded(build(ops, orders[c->second], at, 0, static_cast<int>(ops.size()) - 1), n->shape);
      continue;
    }
    bool changed = false;
    std::vector<NodeRef> ins;
    for (const NodeRef& in : n->inputs) {
      ins.push_back(get(in));
      changed = changed || ins.back() != in;
    }
    if (changed) now[n.get()] = make_node(n->op, std::move(ins), n->attrs, n->shape, n->dtype);
  }
  std::vector<NodeRef> out;
  for (const NodeRef& r : roots) out.push_back(get(r));
  return out;
}

// The matmuls' own estimates by operand shapes, kept across observations for the last mesh: a
// loop observes the same chains again and again, and on one rank this is all reassociation costs
// (W5's einsum paid ~0.1 ms an observation for it and its report). Bounded: shapes vary freely.
class AloneMemo {
 public:
  using Key = std::vector<int64_t>;
  std::optional<double> find(const Mesh& m, const Key& k) {
    const std::lock_guard lock(mu_);
    if (!(m == mesh_)) return std::nullopt;
    const auto it = memo_.find(k);
    return it == memo_.end() ? std::nullopt : std::optional<double>(it->second);
  }
  void keep(const Mesh& m, const Key& k, double v) {
    const std::lock_guard lock(mu_);
    if (!(m == mesh_) || memo_.size() >= 4096) memo_.clear(), mesh_ = m;
    memo_[k] = v;
  }

 private:
  std::mutex mu_;
  Mesh mesh_;
  std::map<Key, double> memo_;
};

AloneMemo& alone_memo() {
  static AloneMemo memo;
  return memo;
}

// The cost of multiplying product [lo, s] by [s + 1, hi] of a chain, from the shapes alone:
// flops, or the op's estimate by itself on the mesh (alone_time), with the operands' batch dims
// as the chain's order would have them (the written order: the leaves as they are).
class Steps {
 public:
  // alone(): the estimates by operand shapes, shared by every chain (a repeated layer's chains
  // have the same products) and every observation (AloneMemo).
  Steps(const Chain& ch, const std::unordered_set<uint64_t>& held) : dtype_(ch.root->dtype) {
    for (const NodeRef& l : ch.leaves) {
      leaves_.push_back(l->shape);
      bases_.push_back(base_of(l, held)->shape);
    }
  }
  double flops(int lo, int s, int hi) const {
    const Shape b = batch(lo, hi, false);
    double v = 2.0 * double(numel(b));
    return v * double(rows(lo)) * double(cols(s)) * double(cols(hi));
  }
  double alone(int lo, int s, int hi, bool written, const Mesh& m) {
    const Shape xs = with_matrix(batch(lo, s, written), rows(lo), cols(s));
    const Shape ys = with_matrix(batch(s + 1, hi, written), cols(s), cols(hi));
    std::vector<int64_t> key(xs.begin(), xs.end());  // xs, -1, ys, dtype: no strings (one rank pays it)
    key.push_back(-1);
    key.insert(key.end(), ys.begin(), ys.end());
    key.push_back(int64_t(dtype_));
    if (const std::optional<double> v = alone_memo().find(m, key)) return *v;
    const double v =
        alone_time(product(make_source(nullptr, xs, dtype_), make_source(nullptr, ys, dtype_)), m);
    alone_memo().keep(m, key, v);
    return v;
  }

 private:
  int64_t rows(int i) const { return leaves_[static_cast<size_t>(i)].end()[-2]; }
  int64_t cols(int i) const { return leaves_[static_cast<size_t>(i)].back(); }
  Shape batch(int lo, int hi, bool written) const {
    if (written) return batch_of(leaves_[static_cast<size_t>(lo)]);  // every leaf has the chain's batch
    Shape b;
    for (int i = lo; i <= hi; ++i) b = broadcast_shapes(b, batch_of(bases_[static_cast<size_t>(i)]));
    return b;
  }
  DType dtype_;
  std::vector<Shape> leaves_, bases_;
};

std::string chain_label(const Chain& ch) {
  std::string s = cat_str("matmul chain #", ch.root->id, " of ", ch.leaves.size(), " operands");
  for (size_t i = 0; i < ch.leaves.size(); ++i) s += cat_str(i ? ", " : " ", shape_str(ch.leaves[i]->shape));
  return s;
}

}  // namespace

std::string bracketing_string(const Bracketing& b, int n) {
  std::string out;
  size_t at = 0;
  bracket_string(b, at, 0, n - 1, out);
  return out;
}

std::vector<Bracketing> bracketings(int n) {
  std::vector<Bracketing> out;
  all_brackets(0, n - 1, out);
  return out;
}

Bracketing cheapest(int n, const std::function<double(int, int, int)>& step) {
  const size_t N = static_cast<size_t>(n);
  std::vector<std::vector<double>> best(N, std::vector<double>(N, 0.0));
  std::vector<std::vector<int>> split(N, std::vector<int>(N, 0));
  for (int len = 2; len <= n; ++len)
    for (int lo = 0; lo + len - 1 < n; ++lo) {
      const int hi = lo + len - 1;
      double low = INFINITY;
      for (int s = lo; s < hi; ++s) {
        const double c = best[lo][s] + best[s + 1][hi] + step(lo, s, hi);
        if (c < low) low = c, split[lo][hi] = s;
      }
      best[lo][hi] = low;
    }
  Bracketing b;
  std::vector<std::pair<int, int>> stack{{0, n - 1}};
  while (!stack.empty()) {  // preorder: a product, then its left factor, then its right
    const auto [lo, hi] = stack.back();
    stack.pop_back();
    if (lo == hi) continue;
    const int s = split[lo][hi];
    b.push_back(s);
    stack.push_back({s + 1, hi});
    stack.push_back({lo, s});
  }
  return b;
}

bool may_have_chains(const std::vector<NodeRef>& roots) {
  constexpr int kDepth = 64, kVisits = 256;
  const Node* stack[kDepth];
  int top = 0, visits = 0;
  for (const NodeRef& r : roots) {
    if (top == kDepth) return true;
    stack[top++] = r.get();
  }
  while (top > 0) {
    const Node* n = stack[--top];
    if (n->value) continue;
    if (++visits > kVisits) return true;  // a bigger graph (or a shared one walked twice): look closer
    for (const NodeRef& in : n->inputs) {
      if (n->op == Op::Matmul && in->op == Op::Matmul && !in->value) return true;
      if (top == kDepth) return true;
      stack[top++] = in.get();
    }
  }
  return false;
}

std::vector<Chain> find_chains(const std::vector<NodeRef>& roots, const std::vector<Shard>& initial) {
  const std::vector<NodeRef> topo = observed_subgraph(roots);
  const std::unordered_set<uint64_t> held = held_ids(initial);
  std::unordered_set<const Node*> root;
  for (const NodeRef& r : roots) root.insert(r.get());
  std::unordered_map<const Node*, std::pair<int, const Node*>> read;  // uses, and the last reader
  bool any = false;
  for (const NodeRef& n : topo) {
    if (n->value) continue;
    for (const NodeRef& in : n->inputs) {
      auto& [uses, by] = read[in.get()];
      ++uses, by = n.get();
      any = any || (n->op == Op::Matmul && in->op == Op::Matmul);
    }
  }
  std::vector<Chain> chains;
  if (!any) return chains;
  auto own = [&](const Node* x) {  // an op of the graph, not a value given to it
    return !x->value && !x->stored && !held.count(x->id);
  };
  auto link = [&](const Node* x) {  // an inner product of a chain
    if (x->op != Op::Matmul || !own(x) || root.count(x)) return false;
    auto it = read.find(x);
    return it != read.end() && it->second.first == 1 && it->second.second->op == Op::Matmul;
  };
  for (const NodeRef& n : topo) {
    if (n->op != Op::Matmul || !own(n.get()) || link(n.get())) continue;
    if (!link(n->inputs[0].get()) && !link(n->inputs[1].get())) continue;
    Chain ch{n, {}, {}};
    std::function<void(const NodeRef&, bool)> walk = [&](const NodeRef& x, bool top) {
      if (!top && !link(x.get())) {
        ch.leaves.push_back(x);
        return;
      }
      const size_t slot = ch.written.size();
      ch.written.push_back(0);
      walk(x->inputs[0], false);
      ch.written[slot] = static_cast<int>(ch.leaves.size()) - 1;
      walk(x->inputs[1], false);
    };
    walk(n, true);
    chains.push_back(std::move(ch));
  }
  return chains;
}

Reassociated reassociate_as(const std::vector<NodeRef>& roots, const std::vector<Shard>& initial,
                            const std::vector<Bracketing>& orders) {
  const std::vector<Chain> chains = find_chains(roots, initial);
  internal_check(chains.size() == orders.size());
  Reassociated r;
  r.orders = orders;
  for (size_t k = 0; k < chains.size(); ++k) {
    const int n = static_cast<int>(chains[k].leaves.size());
    r.changed += orders[k] != chains[k].written;
    r.report.push_back(cat_str(chain_label(chains[k]), ": written ", bracketing_string(chains[k].written, n),
                               ", computed as ", bracketing_string(orders[k], n), " (as first planned)"));
  }
  r.roots = r.changed ? rewrite(roots, observed_subgraph(roots), chains, orders, held_ids(initial)) : roots;
  return r;
}

Reassociated reassociate(const std::vector<NodeRef>& roots, const std::vector<Shard>& initial, const Mesh& m,
                         const SearchOptions& opt, const PlannedCost& planned, bool explain) {
  Reassociated r;
  r.roots = roots;
  const std::vector<Chain> chains =
      opt.reassociate && may_have_chains(roots) ? find_chains(roots, initial) : std::vector<Chain>{};
  if (chains.empty()) return r;
  const std::unordered_set<uint64_t> held = held_ids(initial);
  const std::vector<NodeRef> topo = observed_subgraph(roots);
  for (const Chain& ch : chains) r.orders.push_back(ch.written);
  int64_t work = 0;
  StageTables tables;  // every order's global stage shares the tables of the ops it shares
  // The objective of the whole graph with chain k in order b, the others as chosen so far: the
  // global stage's optimum (time plus bytes at their price) over every op's sharding.
  auto with = [&](size_t k, const Bracketing& b) {
    std::vector<Bracketing> orders = r.orders;
    orders[k] = b;
    return rewrite(roots, topo, chains, orders, held);
  };
  auto joint = [&](size_t k, const Bracketing& b) {
    const std::vector<NodeRef> now = with(k, b);
    const std::vector<NodeRef> order = observed_subgraph(now);
    work += static_cast<int64_t>(order.size());
    return global_start(order, initial, now, m, constrained(order, m.ranks, opt), &tables).choice.cost;
  };
  for (size_t k = 0; k < chains.size(); ++k) {
    const Chain& ch = chains[k];
    const int n = static_cast<int>(ch.leaves.size());
    Steps steps(ch, held);
    auto alone = [&](const Bracketing& b) {
      const bool written = b == ch.written;
      return sum_of(b, n, [&](int lo, int s, int hi) { return steps.alone(lo, s, hi, written, m); });
    };
    auto by_alone = [&] {
      return cheapest(n, [&](int lo, int s, int hi) { return steps.alone(lo, s, hi, false, m); });
    };
    Bracketing chosen = ch.written;
    std::string how;
    const bool jointly = m.ranks > 1 && work + int64_t(topo.size()) * 2 <= kReassociateWork;
    if (jointly) {
      std::vector<Bracketing> tried;
      if (n <= kAllOrdersUpTo) {
        tried = bracketings(n);
      } else {
        tried = {ch.written, by_alone(),
                 cheapest(n, [&](int lo, int s, int hi) { return steps.flops(lo, s, hi); })};
        if (tried[2] == tried[1]) tried.pop_back();
      }
      const double written = joint(k, ch.written);
      std::vector<std::pair<double, size_t>> ranked;  // the other orders by the global stage
      for (size_t t = 0; t < tried.size(); ++t) {
        if (tried[t] == ch.written || work + int64_t(topo.size()) > kReassociateWork) continue;
        ranked.push_back({joint(k, tried[t]), t});
      }
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      double base = written, best = written;
      std::string by = "the global stage";
      // A whole search counts as two global stages (the stage, then its refinement).
      const int64_t search_work = 2 * int64_t(topo.size());
      if (planned && !ranked.empty() && work + 2 * search_work <= kReassociateWork) {
        // The finalists planned whole: the written order, then the best others while they may win.
        by = "the search";
        work += search_work;
        base = best = planned(with(k, ch.written));
        for (size_t f = 0; f < ranked.size() && f < size_t(kFinalists); ++f) {
          if (work + search_work > kReassociateWork) break;
          work += search_work;
          const double c = planned(with(k, tried[ranked[f].second]));
          if (c < best * (1 - 1e-12)) best = c, chosen = tried[ranked[f].second];
        }
      } else if (!ranked.empty() && ranked[0].first < best * (1 - 1e-12)) {
        best = ranked[0].first, chosen = tried[ranked[0].second];
      }
      if (best > base * (1 - kReassociateGain)) chosen = ch.written;
      how = cat_str("planned jointly with the sharding by ", by, ", ", tried.size(), " orders: written ",
                    base, ", chosen ", chosen == ch.written ? base : best);
    } else {
      const Bracketing cheap = by_alone();
      const double written = alone(ch.written), best = alone(cheap);
      if (best <= written * (1 - kReassociateGain)) chosen = cheap;
      if (explain)
        how = cat_str("by its matmuls' own estimates: written ", written, ", chosen ",
                      chosen == ch.written ? written : best);
    }
    r.orders[k] = chosen;
    r.changed += chosen != ch.written;
    if (explain)
      r.report.push_back(cat_str(chain_label(ch), ": written ", bracketing_string(ch.written, n),
                                 ", computed as ", bracketing_string(chosen, n), " (", how, " s)"));
  }
  if (r.changed) r.roots = rewrite(roots, topo, chains, r.orders, held);
  return r;
}

}  // namespace tapestry::plan
