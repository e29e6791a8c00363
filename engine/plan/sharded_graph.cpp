#include "engine/plan/sharded_graph.hpp"

#include <algorithm>
#include <cstdint>

#include "engine/ir/error.hpp"

namespace tapestry::plan {

ShardedGraph::ShardedGraph(int ranks) : num_ranks(ranks), steps(ranks > 0 ? ranks : 0) {
  internal_check(ranks >= 1);
}

void ShardedGraph::hold(uint64_t tensor, Box box, Rank rank) {
  initial.push_back(Shard{tensor, std::move(box), rank});
}

size_t ShardedGraph::add_block(uint64_t node, Box box, Rank rank) {
  internal_check(rank >= 0 && rank < num_ranks);
  blocks.push_back(Block{node, std::move(box), rank});
  steps[rank].push_back(Step{Step::Kind::Run, blocks.size() - 1});
  return blocks.size() - 1;
}

size_t ShardedGraph::add_transfer(uint64_t tensor, Box slice, Rank from, Rank to) {
  internal_check(from >= 0 && from < num_ranks && to >= 0 && to < num_ranks);
  transfers.push_back(Transfer{tensor, std::move(slice), from, to});
  steps[from].push_back(Step{Step::Kind::Send, transfers.size() - 1});
  steps[to].push_back(Step{Step::Kind::Recv, transfers.size() - 1});
  return transfers.size() - 1;
}

size_t ShardedGraph::add_combine(uint64_t node, poly::CombineKind kind, std::vector<size_t> partials, Box out,
                                 std::vector<Rank> dest) {
  combines.push_back(Combine{node, kind, std::move(partials), std::move(out), std::move(dest),
                             transfers.size(), exchanges.size()});
  const size_t c = combines.size() - 1;
  for (Rank r : participants(combines[c])) {
    internal_check(r >= 0 && r < num_ranks);
    steps[r].push_back(Step{Step::Kind::Combine, c});
  }
  return c;
}

void ShardedGraph::add_output(uint64_t root, Box box, Rank rank) {
  if (std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
  outputs.push_back(Shard{root, std::move(box), rank});
}

size_t ShardedGraph::add_exchanged_transfer(uint64_t tensor, Box slice, Rank from, Rank to) {
  internal_check(from >= 0 && from < num_ranks && to >= 0 && to < num_ranks);
  transfers.push_back(Transfer{tensor, std::move(slice), from, to});
  return transfers.size() - 1;
}

size_t ShardedGraph::add_exchange(Exchange::Kind kind, uint64_t tensor, std::vector<Rank> members,
                                  Rank root) {
  exchanges.push_back(Exchange{kind, tensor, std::move(members), root, {}, transfers.size()});
  const size_t e = exchanges.size() - 1;
  for (Rank r : exchanges[e].members) {
    internal_check(r >= 0 && r < num_ranks);
    steps[static_cast<size_t>(r)].push_back(Step{Step::Kind::Exchange, e});
  }
  return e;
}

std::vector<int> ShardedGraph::exchange_of_transfers() const {
  std::vector<int> of(transfers.size(), -1);
  for (size_t e = 0; e < exchanges.size(); ++e)
    for (size_t t : exchanges[e].transfers)
      if (t < of.size()) of[t] = static_cast<int>(e);
  return of;
}

const char* exchange_kind_name(Exchange::Kind k) {
  switch (k) {
    case Exchange::Kind::Broadcast: return "broadcast";
    case Exchange::Kind::AllGather: return "all-gather";
    case Exchange::Kind::AllToAll: return "all-to-all";
  }
  return "?";
}

std::vector<Rank> ShardedGraph::participants(const Combine& c) const {
  std::vector<Rank> r = c.dest;
  for (size_t b : c.partials)
    if (b < blocks.size()) r.push_back(blocks[b].rank);
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

const Node* ShardedGraph::find(uint64_t id) const {
  for (const NodeRef& n : nodes)
    if (n->id == id) return n.get();
  return nullptr;
}

namespace {
std::string node_name(const ShardedGraph& g, uint64_t id) {
  const Node* n = g.find(id);
  return n ? cat_str("%", id, " ", op_def(n->op).name) : cat_str("%", id);
}
}  // namespace

std::string to_string(const ShardedGraph& g) {
  std::string s = cat_str("sharded graph over ", g.num_ranks, " ranks\n");
  for (const Shard& h : g.initial)
    s += cat_str("  rank ", h.rank, " holds ", node_name(g, h.tensor), " ", to_string(h.box), "\n");
  for (Rank r = 0; r < static_cast<Rank>(g.steps.size()); ++r) {
    s += cat_str("rank ", r, ":\n");
    for (const Step& st : g.steps[r]) {
      switch (st.kind) {
        case Step::Kind::Run: {
          const Block& b = g.blocks[st.index];
          s += cat_str("  run   block ", st.index, ": ", node_name(g, b.node), " ", to_string(b.box), "\n");
          break;
        }
        case Step::Kind::Send: {
          const Transfer& t = g.transfers[st.index];
          s += cat_str("  send  ", node_name(g, t.tensor), " ", to_string(t.slice), " to ", t.to, "\n");
          break;
        }
        case Step::Kind::Recv: {
          const Transfer& t = g.transfers[st.index];
          s += cat_str("  recv  ", node_name(g, t.tensor), " ", to_string(t.slice), " from ", t.from, "\n");
          break;
        }
        case Step::Kind::Combine: {
          const Combine& c = g.combines[st.index];
          s += cat_str("  ", poly::combine_name(c.kind), "   ", node_name(g, c.node), " ", to_string(c.out),
                       " of");
          for (size_t p : c.partials) s += cat_str(" block ", p);
          s += " to";
          for (Rank d : c.dest) s += cat_str(" ", d);
          s += "\n";
          break;
        }
        case Step::Kind::Exchange: {
          const Exchange& e = g.exchanges[st.index];
          s += cat_str("  ", exchange_kind_name(e.kind), " ", node_name(g, e.tensor), " over");
          for (Rank m : e.members) s += cat_str(" ", m);
          if (e.kind == Exchange::Kind::Broadcast) s += cat_str(" from ", e.root);
          s += ":";
          for (size_t t : e.transfers)
            if (t < g.transfers.size() && (g.transfers[t].from == r || g.transfers[t].to == r))
              s += cat_str(" ", to_string(g.transfers[t].slice), " ", g.transfers[t].from, "->",
                           g.transfers[t].to);
          s += "\n";
          break;
        }
      }
    }
  }
  for (const Shard& o : g.outputs)
    s += cat_str("  result ", node_name(g, o.tensor), " ", to_string(o.box), " on rank ", o.rank, "\n");
  return s;
}

ShardedGraph restrict_to_rank(const ShardedGraph& g, Rank r) {
  internal_check(r >= 0 && r < g.num_ranks);
  ShardedGraph out(g.num_ranks);
  out.part_of = r;
  out.in_bands = g.in_bands;
  out.nodes = g.nodes;
  out.initial = g.initial;
  out.roots = g.roots;
  out.outputs = g.outputs;
  std::vector<size_t> block_at(g.blocks.size(), SIZE_MAX), transfer_at(g.transfers.size(), SIZE_MAX),
      combine_at(g.combines.size(), SIZE_MAX), exchange_at(g.exchanges.size(), SIZE_MAX);
  std::vector<char> keep(g.blocks.size(), 0);
  for (size_t b = 0; b < g.blocks.size(); ++b) keep[b] = g.blocks[b].rank == r;
  for (const Combine& c : g.combines) {
    const std::vector<Rank> who = g.participants(c);
    if (std::find(who.begin(), who.end(), r) != who.end())
      for (size_t b : c.partials) keep[b] = 1;
  }
  for (size_t b = 0; b < g.blocks.size(); ++b)
    if (keep[b]) block_at[b] = out.blocks.size(), out.blocks.push_back(g.blocks[b]);
  for (size_t t = 0; t < g.transfers.size(); ++t)
    if (g.transfers[t].from == r || g.transfers[t].to == r)
      transfer_at[t] = out.transfers.size(), out.transfers.push_back(g.transfers[t]);
  std::vector<size_t> kept_before(g.transfers.size() + 1, 0);  // transfers kept before index t
  for (size_t t = 0; t < g.transfers.size(); ++t)
    kept_before[t + 1] = kept_before[t] + (transfer_at[t] != SIZE_MAX);
  std::vector<size_t> exchanges_kept(g.exchanges.size() + 1, 0);  // exchanges kept before index e
  for (size_t e = 0; e < g.exchanges.size(); ++e)
    exchanges_kept[e + 1] = exchanges_kept[e] + std::binary_search(g.exchanges[e].members.begin(),
                                                                   g.exchanges[e].members.end(), r);
  for (size_t c = 0; c < g.combines.size(); ++c) {
    const std::vector<Rank> who = g.participants(g.combines[c]);
    if (std::find(who.begin(), who.end(), r) == who.end()) continue;
    Combine k = g.combines[c];
    for (size_t& b : k.partials) b = block_at[b];
    if (k.after != Combine::kUnplaced) {
      k.after = kept_before[std::min(k.after, g.transfers.size())];
      k.exchanges_before = exchanges_kept[std::min(k.exchanges_before, g.exchanges.size())];
    }
    combine_at[c] = out.combines.size();
    out.combines.push_back(std::move(k));
  }
  for (size_t e = 0; e < g.exchanges.size(); ++e) {
    const Exchange& x = g.exchanges[e];
    if (!std::binary_search(x.members.begin(), x.members.end(), r)) continue;
    Exchange k = x;
    if (x.after != Exchange::kUnplaced) k.after = kept_before[std::min(x.after, g.transfers.size())];
    k.transfers.clear();
    for (size_t t : x.transfers)
      if (transfer_at[t] != SIZE_MAX) k.transfers.push_back(transfer_at[t]);
    exchange_at[e] = out.exchanges.size();
    out.exchanges.push_back(std::move(k));
  }
  for (Step s : g.steps[static_cast<size_t>(r)]) {
    switch (s.kind) {
      case Step::Kind::Run: s.index = block_at[s.index]; break;
      case Step::Kind::Send:
      case Step::Kind::Recv: s.index = transfer_at[s.index]; break;
      case Step::Kind::Combine: s.index = combine_at[s.index]; break;
      case Step::Kind::Exchange: s.index = exchange_at[s.index]; break;
    }
    out.steps[static_cast<size_t>(r)].push_back(s);
  }
  return out;
}

}  // namespace tapestry::plan
