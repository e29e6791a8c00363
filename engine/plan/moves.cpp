#include "engine/plan/moves.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "engine/ir/error.hpp"
#include "engine/plan/collective_cost.hpp"
#include "engine/plan/cost.hpp"

namespace tapestry::plan {

const char* move_kind_name(MoveKind k) {
  switch (k) {
    case MoveKind::PointToPoint: return "point-to-point";
    case MoveKind::Broadcast: return "broadcast";
    case MoveKind::AllGather: return "all-gather";
    case MoveKind::AllToAll: return "all-to-all";
    case MoveKind::Reduce: return "reduce";
    case MoveKind::AllReduce: return "all-reduce";
    case MoveKind::ReduceScatter: return "reduce-scatter";
  }
  return "?";
}

int64_t slice_bytes(const ShardedGraph& g, uint64_t id, const Box& b) {
  const Node* n = g.find(id);
  internal_check(n != nullptr);
  int64_t e = b.empty() ? 0 : b.volume();
  for (size_t d = static_cast<size_t>(b.rank()); d < n->shape.size(); ++d) e *= n->shape[d];
  return e * static_cast<int64_t>(dtype_size(n->dtype));
}

int64_t combine_bytes(const ShardedGraph& g, const Combine& c) {
  const int64_t who = static_cast<int64_t>(g.participants(c).size());
  const int64_t dests = static_cast<int64_t>(c.dest.size());
  return slice_bytes(g, c.node, c.out) * std::max<int64_t>(0, who - 1 + dests - 1);
}

namespace {

struct UnionFind {
  std::vector<size_t> up;
  explicit UnionFind(size_t n) : up(n) { std::iota(up.begin(), up.end(), size_t{0}); }
  size_t find(size_t a) {
    while (up[a] != a) a = up[a] = up[up[a]];
    return a;
  }
  void join(size_t a, size_t b) {
    a = find(a), b = find(b);
    if (a != b) up[std::max(a, b)] = std::min(a, b);  // the earliest transfer names the tree
  }
};

void add_rank(std::vector<Rank>& v, Rank r) {
  const auto at = std::lower_bound(v.begin(), v.end(), r);
  if (at == v.end() || *at != r) v.insert(at, r);
}

// The transfers of one tensor, grouped.
void classify_tensor(const ShardedGraph& g, uint64_t tensor, const std::vector<size_t>& ts, UnionFind& uf,
                     std::vector<MoveGroup>& out) {
  struct Tree {
    std::vector<size_t> transfers;
    std::vector<Rank> ranks, receivers;
    Rank root;
    int64_t slice;  // bytes of its first transfer's slice
  };
  std::map<size_t, Tree> trees;  // by the tree's first transfer
  for (size_t t : ts) {
    Tree& tr = trees[uf.find(t)];
    const Transfer& x = g.transfers[t];
    if (tr.transfers.empty()) tr.root = x.from, tr.slice = slice_bytes(g, tensor, x.slice);
    tr.transfers.push_back(t);
    add_rank(tr.ranks, x.from);
    add_rank(tr.ranks, x.to);
    add_rank(tr.receivers, x.to);
  }
  auto group = [&](MoveKind k, const std::vector<const Tree*>& members) {
    MoveGroup c;
    c.kind = k;
    c.tensor = tensor;
    for (const Tree* tr : members) {
      for (size_t t : tr->transfers) {
        c.transfers.push_back(t);
        c.bytes += slice_bytes(g, tensor, g.transfers[t].slice);
      }
      for (Rank r : tr->ranks) add_rank(c.ranks, r);
      c.payload += k == MoveKind::Broadcast || k == MoveKind::AllGather ? tr->slice : 0;
    }
    std::sort(c.transfers.begin(), c.transfers.end());
    if (k == MoveKind::PointToPoint || k == MoveKind::AllToAll) c.payload = c.bytes;
    out.push_back(std::move(c));
  };
  // An all-to-all: single slices between every ordered pair of three or more ranks (two ranks
  // swapping slices are an all-gather below).
  auto all_pairs = [&](const std::vector<const Tree*>& singles, size_t at_least) {
    std::vector<Rank> who;
    std::set<std::pair<Rank, Rank>> pairs;
    for (const Tree* tr : singles)
      for (size_t t : tr->transfers) {
        add_rank(who, g.transfers[t].from);
        add_rank(who, g.transfers[t].to);
        pairs.insert({g.transfers[t].from, g.transfers[t].to});
      }
    if (who.size() < at_least) return false;
    // A rank's own part lists only its own pairs: it sends to and receives from every other.
    if (g.part_of >= 0) return pairs.size() == 2 * (who.size() - 1);
    return pairs.size() == who.size() * (who.size() - 1);
  };
  std::set<const Tree*> gathered;
  {
    std::vector<const Tree*> singles;
    for (const auto& [first, tr] : trees)
      if (tr.receivers.size() == 1) singles.push_back(&tr);
    if (all_pairs(singles, 3)) {
      group(MoveKind::AllToAll, singles);
      gathered.insert(singles.begin(), singles.end());
    }
  }
  // An all-gather: trees over the same ranks, every one of which roots one of them (a q x q
  // grid's row panels: one all-gather per row).
  std::map<std::vector<Rank>, std::vector<const Tree*>> by_ranks;
  for (const auto& [first, tr] : trees)
    if (!gathered.count(&tr)) by_ranks[tr.ranks].push_back(&tr);
  for (const auto& [ranks, members] : by_ranks) {
    std::set<Rank> roots;
    for (const Tree* tr : members) roots.insert(tr->root);
    if (members.size() < 2 || roots.size() != ranks.size()) continue;
    group(MoveKind::AllGather, members);
    gathered.insert(members.begin(), members.end());
  }
  std::vector<const Tree*> singles;
  for (const auto& [first, tr] : trees) {
    if (gathered.count(&tr)) continue;
    if (tr.receivers.size() >= 2) group(MoveKind::Broadcast, {&tr});
    else singles.push_back(&tr);
  }
  if (singles.empty()) return;
  group(all_pairs(singles, 2) ? MoveKind::AllToAll : MoveKind::PointToPoint, singles);
}

}  // namespace

Moves classify_moves(const ShardedGraph& g) {
  Moves mv;
  mv.transfer_group.assign(g.transfers.size(), -1);
  mv.combine_group.assign(g.combines.size(), -1);
  // Trees: a sender's copies of one slice, and what a rank forwards of a slice it received.
  UnionFind uf(g.transfers.size());
  const std::vector<int> exchanged = g.exchange_of_transfers();
  std::map<std::tuple<uint64_t, Rank, std::vector<int64_t>, std::vector<int64_t>>, size_t> first_copy;
  std::unordered_map<uint64_t, std::unordered_map<Rank, std::vector<size_t>>>
      into;  // tensor -> rank -> transfers
  std::map<uint64_t, std::vector<size_t>> by_tensor;
  for (size_t t = 0; t < g.transfers.size(); ++t) {
    if (exchanged[t] >= 0) continue;  // its exchange's group, below
    const Transfer& x = g.transfers[t];
    const auto key = std::make_tuple(x.tensor, x.from, x.slice.lo, x.slice.hi);
    const auto [at, fresh] = first_copy.emplace(key, t);
    if (!fresh) uf.join(at->second, t);
    const auto in = into.find(x.tensor);
    if (in != into.end()) {
      const auto got = in->second.find(x.from);
      if (got != in->second.end())
        for (size_t u : got->second)
          if (overlaps(g.transfers[u].slice, x.slice)) uf.join(u, t);
    }
    into[x.tensor][x.to].push_back(t);
    by_tensor[x.tensor].push_back(t);
  }
  for (const auto& [tensor, ts] : by_tensor) classify_tensor(g, tensor, ts, uf, mv.groups);
  for (size_t e = 0; e < g.exchanges.size(); ++e) {
    const Exchange& x = g.exchanges[e];
    if (x.transfers.empty()) continue;
    MoveGroup c;
    c.kind = x.kind == Exchange::Kind::Broadcast   ? MoveKind::Broadcast
             : x.kind == Exchange::Kind::AllGather ? MoveKind::AllGather
                                                   : MoveKind::AllToAll;
    c.tensor = x.tensor;
    c.ranks = x.members;
    c.transfers = x.transfers;
    c.exchange = static_cast<int>(e);
    std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> parts;
    for (size_t t : x.transfers) {
      const int64_t b = slice_bytes(g, x.tensor, g.transfers[t].slice);
      c.bytes += b;
      if (parts.insert({g.transfers[t].slice.lo, g.transfers[t].slice.hi}).second &&
          c.kind != MoveKind::AllToAll)
        c.payload += b;
    }
    if (c.kind == MoveKind::AllToAll) c.payload = c.bytes;
    std::sort(c.transfers.begin(), c.transfers.end());
    mv.groups.push_back(std::move(c));
  }
  std::sort(mv.groups.begin(), mv.groups.end(),
            [](const MoveGroup& a, const MoveGroup& b) { return a.transfers.front() < b.transfers.front(); });
  // Combines: by their destinations; one-destination combines of a node over the same
  // participants are the pieces of one reduce-scatter.
  std::map<std::pair<uint64_t, std::vector<Rank>>, std::vector<size_t>> scatter;
  std::vector<std::vector<Rank>> who(g.combines.size());
  for (size_t c = 0; c < g.combines.size(); ++c) {
    who[c] = g.participants(g.combines[c]);
    if (g.combines[c].dest.size() == 1) scatter[{g.combines[c].node, who[c]}].push_back(c);
  }
  std::vector<bool> placed(g.combines.size(), false);
  for (size_t c = 0; c < g.combines.size(); ++c) {
    if (placed[c]) continue;
    const Combine& k = g.combines[c];
    std::vector<size_t> members{c};
    MoveKind kind = k.dest.size() > 1 ? MoveKind::AllReduce : MoveKind::Reduce;
    if (k.dest.size() == 1) {
      const std::vector<size_t>& same = scatter.at({k.node, who[c]});
      if (same.size() > 1) kind = MoveKind::ReduceScatter, members = same;
    }
    MoveGroup grp;
    grp.kind = kind;
    grp.tensor = k.node;
    grp.ranks = who[c];
    for (size_t m : members) {
      placed[m] = true;
      grp.combines.push_back(m);
      grp.bytes += combine_bytes(g, g.combines[m]);
      grp.payload += slice_bytes(g, k.node, g.combines[m].out);
    }
    mv.groups.push_back(std::move(grp));
  }
  for (size_t i = 0; i < mv.groups.size(); ++i) {
    for (size_t t : mv.groups[i].transfers) mv.transfer_group[t] = static_cast<int>(i);
    for (size_t c : mv.groups[i].combines) mv.combine_group[c] = static_cast<int>(i);
  }
  return mv;
}

double move_time(const MoveGroup& c, const ShardedGraph& g, const Mesh& m) {
  if (c.exchange >= 0 && static_cast<size_t>(c.exchange) < g.exchanges.size())
    return exchange_time(g, g.exchanges[static_cast<size_t>(c.exchange)], m);
  const int p = static_cast<int>(c.ranks.size());
  if (p < 2) return c.payload > 0 ? double(c.payload) / m.mem_bytes_per_s : 0.0;
  const double n = static_cast<double>(c.payload);
  const Link* l = &m.link(c.ranks[0], c.ranks[1]);
  for (Rank r : c.ranks)
    if (r != c.ranks[0] && m.link(c.ranks[0], r).time(n) > l->time(n)) l = &m.link(c.ranks[0], r);
  const double beta = 1 / l->bandwidth;
  switch (c.kind) {
    case MoveKind::Broadcast: return std::ceil(std::log2(double(p))) * l->time(n);  // lower()'s tree
    case MoveKind::AllGather: return (p - 1) * (l->latency + n / p * beta);
    case MoveKind::AllToAll:
    case MoveKind::PointToPoint: {
      std::map<Rank, std::pair<int64_t, int64_t>> out, in;  // messages, bytes
      for (size_t t : c.transfers) {
        const Transfer& x = g.transfers[t];
        const int64_t b = slice_bytes(g, x.tensor, x.slice);
        ++out[x.from].first, out[x.from].second += b;
        ++in[x.to].first, in[x.to].second += b;
      }
      double worst = 0;
      for (const auto* side : {&out, &in})
        for (const auto& [r, mb] : *side)
          worst = std::max(worst, mb.first * l->latency + double(mb.second) * beta);
      if (c.kind == MoveKind::PointToPoint) return worst;
      double bytes = 0;
      for (const auto* side : {&out, &in})
        for (const auto& [r, mb] : *side) bytes = std::max(bytes, double(mb.second));
      return (p - 1) * l->latency + bytes * beta;
    }
    case MoveKind::Reduce: return reduce_time(*l, p, n, m.mem_bytes_per_s).time;
    case MoveKind::AllReduce: return all_reduce_time(*l, p, n, m.mem_bytes_per_s).time;
    case MoveKind::ReduceScatter: return reduce_scatter_time(*l, p, n, m.mem_bytes_per_s).time;
  }
  return 0;
}

}  // namespace tapestry::plan
