// Layout: a sealed message (engine/ir/codec.hpp: magic, version, length, checksum) whose body is
//   ranks u32; nodes; initial; blocks; transfers; combines; exchanges (combines and exchanges
//   each with its place in the transfer order, `after`); steps per rank; roots; outputs
// or, for the choices (magic TPCH):
//   ranks u32; nodes; topo ids; initial; root ids; per op: id, parts, rank, combine mode, replicated,
//   bands u32
// Counts are u64, checked by ByteReader against the bytes left.
#include "engine/dist/plan_wire.hpp"

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/codec.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/bands.hpp"

namespace tapestry {

namespace {

using plan::ShardedGraph;
using poly::Box;

constexpr uint32_t kMaxDims = 64;
constexpr uint32_t kMaxRanks = 1 << 20;

void put_box(ByteWriter& w, const Box& b) {
  w.put<uint32_t>(static_cast<uint32_t>(b.lo.size()));
  for (int64_t x : b.lo) w.put(x);
  for (int64_t x : b.hi) w.put(x);
}

void put_shard(ByteWriter& w, const plan::Shard& s) {
  w.put(s.tensor);
  put_box(w, s.box);
  w.put<int32_t>(s.rank);
}

Box get_box(ByteReader& r) {
  const uint32_t dims = r.get<uint32_t>();
  if (dims > kMaxDims) r.reject(cat_str("a box has ", dims, " dims"));
  Box b;
  b.lo.resize(dims);
  b.hi.resize(dims);
  for (int64_t& x : b.lo) x = r.get<int64_t>();
  for (int64_t& x : b.hi) x = r.get<int64_t>();
  return b;
}

bool is_leaf(const Node& n) { return n.value != nullptr || n.op == Op::Source; }

// The plan's nodes and every node they read, inputs first, stopping at leaves. A plan may
// name a node without the nodes it reads (a Constrain's or fused group's input that no block
// computes), and make_node on the worker needs each input before its consumer.
std::vector<const Node*> closure(const std::vector<NodeRef>& listed) {
  std::vector<const Node*> order;
  std::unordered_set<const Node*> seen;
  std::vector<std::pair<const Node*, size_t>> stack;  // iterative: chains can be long
  for (const NodeRef& root : listed) {
    if (!seen.insert(root.get()).second) continue;
    stack.push_back({root.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (!is_leaf(*n) && next < n->inputs.size()) {
        const Node* in = n->inputs[next++].get();
        if (seen.insert(in).second) stack.push_back({in, 0});
        continue;
      }
      order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

void put_nodes(ByteWriter& w, const std::vector<NodeRef>& listed) {
  const std::vector<const Node*> nodes = closure(listed);
  w.size(nodes.size());
  for (const Node* n : nodes) {
    w.put(n->id);
    w.put<uint8_t>(is_leaf(*n) ? 1 : 0);
    w.put<uint16_t>(static_cast<uint16_t>(n->op));
    w.put<uint8_t>(static_cast<uint8_t>(n->dtype));
    w.vec(n->shape);
    if (is_leaf(*n)) continue;
    w.put<uint8_t>(static_cast<uint8_t>(n->attrs.dtype));
    w.vec(n->attrs.ints);
    w.vec(n->attrs.reals);
    w.size(n->inputs.size());
    for (const NodeRef& in : n->inputs) w.put(in->id);
  }
}

}  // namespace

std::vector<char> encode_plan(const ShardedGraph& g) {
  ByteWriter w;
  w.put<uint32_t>(static_cast<uint32_t>(g.num_ranks));
  put_nodes(w, g.nodes);
  w.size(g.initial.size());
  for (const plan::Shard& s : g.initial) put_shard(w, s);
  w.size(g.blocks.size());
  for (const plan::Block& b : g.blocks) {
    w.put(b.node);
    put_box(w, b.box);
    w.put<int32_t>(b.rank);
  }
  w.size(g.transfers.size());
  for (const plan::Transfer& t : g.transfers) {
    w.put(t.tensor);
    put_box(w, t.slice);
    w.put<int32_t>(t.from);
    w.put<int32_t>(t.to);
  }
  w.size(g.combines.size());
  for (const plan::Combine& c : g.combines) {
    w.put(c.node);
    w.put<uint8_t>(static_cast<uint8_t>(c.kind));
    w.size(c.partials.size());
    for (size_t p : c.partials) w.put<uint64_t>(p);
    put_box(w, c.out);
    w.size(c.dest.size());
    for (plan::Rank d : c.dest) w.put<int32_t>(d);
    w.put<uint64_t>(c.after);  // its place in the posting order, as an exchange's
    w.put<uint64_t>(c.exchanges_before);
  }
  w.size(g.exchanges.size());
  for (const plan::Exchange& e : g.exchanges) {
    w.put<uint8_t>(static_cast<uint8_t>(e.kind));
    w.put(e.tensor);
    w.size(e.members.size());
    for (plan::Rank m : e.members) w.put<int32_t>(m);
    w.put<int32_t>(e.root);
    w.size(e.transfers.size());
    for (size_t t : e.transfers) w.put<uint64_t>(t);
    // Its place in the transfer order: device peers post it there on every member alike.
    w.put<uint64_t>(e.after);
  }
  for (const auto& steps : g.steps) {
    w.size(steps.size());
    for (const plan::Step& s : steps) {
      w.put<uint8_t>(static_cast<uint8_t>(s.kind));
      w.put<uint64_t>(s.index);
    }
  }
  w.size(g.roots.size());
  for (uint64_t r : g.roots) w.put(r);
  w.size(g.outputs.size());
  for (const plan::Shard& s : g.outputs) put_shard(w, s);
  return w.seal(kPlanWireMagic, kPlanWireVersion);
}

std::vector<char> encode_choices(const PlanChoices& p) {
  ByteWriter w;
  w.put<uint32_t>(static_cast<uint32_t>(p.input.mesh.ranks));
  std::vector<NodeRef> listed = p.input.topo;
  listed.insert(listed.end(), p.input.roots.begin(), p.input.roots.end());
  put_nodes(w, listed);
  w.size(p.input.topo.size());
  for (const NodeRef& n : p.input.topo) w.put(n->id);
  w.size(p.input.initial.size());
  for (const plan::Shard& s : p.input.initial) put_shard(w, s);
  w.size(p.input.roots.size());
  for (const NodeRef& n : p.input.roots) w.put(n->id);
  w.size(p.choice.size());
  for (const auto& [id, c] : p.choice) {
    w.put(id);
    w.vec(c.parts);
    w.put<int32_t>(c.rank);
    w.put<uint8_t>(static_cast<uint8_t>(c.combine));
    w.put<uint8_t>(c.replicated ? 1 : 0);
    w.put<uint32_t>(static_cast<uint32_t>(c.bands));
  }
  return w.seal(kPlanChoicesMagic, kPlanWireVersion);
}

namespace {

// Decodes the body into `g`, mapping rank 0's node ids to the nodes rebuilt here.
class Decoder {
 public:
  explicit Decoder(ByteReader& r) : r_(r) {}

  ShardedGraph run() {
    const uint32_t ranks = r_.get<uint32_t>();
    if (ranks < 1 || ranks > kMaxRanks) r_.reject(cat_str("bad rank count ", ranks));
    ShardedGraph g(static_cast<int>(ranks));
    nodes(g.nodes);
    for (size_t i = 0, n = r_.count(16); i < n; ++i) g.initial.push_back(shard(g, "an initial shard"));
    for (size_t i = 0, n = r_.count(16); i < n; ++i) {
      const uint64_t node = id(r_.get<uint64_t>(), "a block");
      Box box = get_box(r_);
      g.blocks.push_back(plan::Block{node, std::move(box), rank(g, r_.get<int32_t>())});
    }
    for (size_t i = 0, n = r_.count(20); i < n; ++i) {
      const uint64_t tensor = id(r_.get<uint64_t>(), "a transfer");
      Box slice = get_box(r_);
      const int from = rank(g, r_.get<int32_t>());
      const int to = rank(g, r_.get<int32_t>());
      if (from == to) r_.reject("a transfer from a rank to itself");
      g.transfers.push_back(plan::Transfer{tensor, std::move(slice), from, to});
    }
    for (size_t i = 0, n = r_.count(41); i < n; ++i) g.combines.push_back(combine(g));
    for (size_t i = 0, n = r_.count(30); i < n; ++i) g.exchanges.push_back(exchange(g));
    for (const plan::Combine& c : g.combines)
      if (c.exchanges_before > g.exchanges.size())
        r_.reject(
            cat_str("a combine placed after exchange ", c.exchanges_before, " of ", g.exchanges.size()));
    for (auto& steps : g.steps) {
      for (size_t i = 0, n = r_.count(9); i < n; ++i) steps.push_back(step(g));
    }
    for (size_t i = 0, n = r_.count(8); i < n; ++i) g.roots.push_back(id(r_.get<uint64_t>(), "a root"));
    for (size_t i = 0, n = r_.count(16); i < n; ++i) g.outputs.push_back(shard(g, "an output"));
    r_.end();
    return g;
  }

  PlanChoices choices() {
    const uint32_t ranks = r_.get<uint32_t>();
    if (ranks < 1 || ranks > kMaxRanks) r_.reject(cat_str("bad rank count ", ranks));
    ShardedGraph g(1);  // for rank(): the mesh's size
    g.num_ranks = static_cast<int>(ranks);
    PlanChoices p{{{}, {}, {}, plan::Mesh::modelled(static_cast<int>(ranks))}, {}};
    std::vector<NodeRef> listed;
    nodes(listed);
    for (size_t i = 0, n = r_.count(8); i < n; ++i) p.input.topo.push_back(node(r_.get<uint64_t>(), "topo"));
    for (size_t i = 0, n = r_.count(16); i < n; ++i) p.input.initial.push_back(shard(g, "an initial shard"));
    for (size_t i = 0, n = r_.count(8); i < n; ++i)
      p.input.roots.push_back(node(r_.get<uint64_t>(), "a root"));
    for (size_t i = 0, n = r_.count(14); i < n; ++i) {
      const NodeRef op = node(r_.get<uint64_t>(), "a choice");
      plan::Candidate c;
      c.parts = r_.vec<int64_t>();
      c.rank = rank(g, r_.get<int32_t>());
      const uint8_t mode = r_.get<uint8_t>();
      if (mode > static_cast<uint8_t>(plan::CombineMode::ReduceScatter))
        r_.reject(cat_str("combine mode ", int(mode)));
      c.combine = static_cast<plan::CombineMode>(mode);
      const uint8_t replicated = r_.get<uint8_t>();
      if (replicated > 1) r_.reject(cat_str("replicated flag ", int(replicated)));
      c.replicated = replicated == 1;
      const auto bands = r_.get<uint32_t>();
      if (bands < 1 || bands > static_cast<uint32_t>(plan::kMaxBands)) r_.reject(cat_str(bands, " bands"));
      c.bands = static_cast<int>(bands);
      // place() cuts the op's index space into these parts: each within its dim's extent.
      const poly::Signature s = poly::signature_of(*op);
      if (static_cast<int>(c.parts.size()) != s.rank())
        r_.reject(cat_str("the choice of node %", op->id, " has ", c.parts.size(), " parts for ", s.rank(),
                          " index dims"));
      for (int j = 0; j < s.rank(); ++j)
        if (c.parts[static_cast<size_t>(j)] < 1 ||
            c.parts[static_cast<size_t>(j)] > std::max<int64_t>(1, s.space[j].extent))
          r_.reject(cat_str("the choice of node %", op->id, " cuts index dim ", j, " into ",
                            c.parts[static_cast<size_t>(j)], " parts"));
      if (!p.choice.emplace(op->id, std::move(c)).second)
        r_.reject(cat_str("node %", op->id, " has two choices"));
    }
    r_.end();
    return p;
  }

  const WireIds& ids() const { return local_; }

 private:
  NodeRef node(uint64_t wire_id, const char* what) const {
    auto it = local_.find(wire_id);
    if (it == local_.end())
      r_.reject(cat_str(what, " names node ", wire_id, ", which the message does not list"));
    return it->second;
  }

  void nodes(std::vector<NodeRef>& out) {
    const size_t n = r_.count(16);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t wire_id = r_.get<uint64_t>();
      const bool leaf = r_.get<uint8_t>() != 0;
      const uint16_t op = r_.get<uint16_t>();
      const uint8_t dtype = r_.get<uint8_t>();
      if (op >= kNumOps) r_.reject(cat_str("node ", wire_id, " has op number ", op));
      if (dtype >= kNumDTypes) r_.reject(cat_str("node ", wire_id, " has dtype number ", int(dtype)));
      const Shape shape = r_.vec<int64_t>();
      if (shape.size() > kMaxDims) r_.reject(cat_str("node ", wire_id, " has ", shape.size(), " dims"));
      for (int64_t e : shape)
        if (e < 0) r_.reject(cat_str("node ", wire_id, " has a negative extent"));
      if (local_.count(wire_id)) r_.reject(cat_str("node ", wire_id, " is listed twice"));
      NodeRef made;
      if (leaf) {
        // Its data stays on rank 0; the plan moves the slices this rank reads.
        made = make_source(nullptr, shape, static_cast<DType>(dtype));
      } else {
        if (static_cast<Op>(op) == Op::Source) r_.reject(cat_str("source node ", wire_id, " is not a leaf"));
        Attrs a;
        const uint8_t adt = r_.get<uint8_t>();
        if (adt >= kNumDTypes) r_.reject(cat_str("node ", wire_id, " has attribute dtype ", int(adt)));
        a.dtype = static_cast<DType>(adt);
        a.ints = r_.vec<int64_t>();
        a.reals = r_.vec<double>();
        std::vector<NodeRef> inputs(r_.count(8));
        for (NodeRef& in : inputs) {
          const uint64_t in_id = r_.get<uint64_t>();
          auto it = local_.find(in_id);
          if (it == local_.end())
            r_.reject(cat_str("node ", wire_id, " reads node ", in_id, ", not listed before it"));
          in = it->second;
        }
        const int arity = op_def(static_cast<Op>(op)).arity;
        if (arity >= 0 && static_cast<size_t>(arity) != inputs.size())
          r_.reject(cat_str("node ", wire_id, " (", op_def(static_cast<Op>(op)).name, ") has ", inputs.size(),
                            " inputs"));
        made =
            make_node(static_cast<Op>(op), std::move(inputs), std::move(a), shape, static_cast<DType>(dtype));
      }
      // Distinct nodes on rank 0 are distinct in structure, so they stay distinct here.
      if (!made_.insert(made.get()).second) r_.reject(cat_str("node ", wire_id, " duplicates another node"));
      local_[wire_id] = made;
      out.push_back(made);
    }
  }

  uint64_t id(uint64_t wire_id, const char* what) const {
    auto it = local_.find(wire_id);
    if (it == local_.end())
      r_.reject(cat_str(what, " names node ", wire_id, ", which the plan does not list"));
    return it->second->id;
  }

  int rank(const ShardedGraph& g, int32_t r) const {
    if (r < 0 || r >= g.num_ranks) r_.reject(cat_str("rank ", r, " is outside the mesh of ", g.num_ranks));
    return r;
  }

  plan::Shard shard(const ShardedGraph& g, const char* what) {
    const uint64_t tensor = id(r_.get<uint64_t>(), what);
    Box box = get_box(r_);
    return plan::Shard{tensor, std::move(box), rank(g, r_.get<int32_t>())};
  }

  plan::Combine combine(const ShardedGraph& g) {
    plan::Combine c;
    c.node = id(r_.get<uint64_t>(), "a combine");
    const uint8_t kind = r_.get<uint8_t>();
    if (kind > static_cast<uint8_t>(poly::CombineKind::ArgMin))
      r_.reject(cat_str("combine kind ", int(kind)));
    c.kind = static_cast<poly::CombineKind>(kind);
    c.partials.resize(r_.count(8));
    for (size_t& p : c.partials) {
      p = r_.get<uint64_t>();
      if (p >= g.blocks.size()) r_.reject(cat_str("a combine merges block ", p, " of ", g.blocks.size()));
    }
    c.out = get_box(r_);
    c.dest.resize(r_.count(4));
    for (plan::Rank& d : c.dest) d = rank(g, r_.get<int32_t>());
    const uint64_t after = r_.get<uint64_t>();
    if (after != plan::Combine::kUnplaced && after > g.transfers.size())
      r_.reject(cat_str("a combine placed after transfer ", after, " of ", g.transfers.size()));
    c.after = static_cast<size_t>(after);
    c.exchanges_before = static_cast<size_t>(r_.get<uint64_t>());  // checked once exchanges are read
    return c;
  }

  plan::Exchange exchange(const ShardedGraph& g) {
    plan::Exchange e;
    const uint8_t kind = r_.get<uint8_t>();
    if (kind > static_cast<uint8_t>(plan::Exchange::Kind::AllToAll))
      r_.reject(cat_str("exchange kind ", int(kind)));
    e.kind = static_cast<plan::Exchange::Kind>(kind);
    e.tensor = id(r_.get<uint64_t>(), "an exchange");
    e.members.resize(r_.count(4));
    for (plan::Rank& m : e.members) m = rank(g, r_.get<int32_t>());
    for (size_t i = 1; i < e.members.size(); ++i)
      if (e.members[i - 1] >= e.members[i])
        r_.reject("an exchange's members are not distinct ranks in order");
    e.root = r_.get<int32_t>();
    if (e.kind == plan::Exchange::Kind::Broadcast) rank(g, e.root);
    e.transfers.resize(r_.count(8));
    for (size_t& t : e.transfers) {
      t = r_.get<uint64_t>();
      if (t >= g.transfers.size())
        r_.reject(cat_str("an exchange carries transfer ", t, " of ", g.transfers.size()));
    }
    const uint64_t after = r_.get<uint64_t>();
    if (after != plan::Exchange::kUnplaced && after > g.transfers.size())
      r_.reject(cat_str("an exchange placed after transfer ", after, " of ", g.transfers.size()));
    e.after = static_cast<size_t>(after);
    return e;
  }

  plan::Step step(const ShardedGraph& g) {
    const uint8_t kind = r_.get<uint8_t>();
    const uint64_t index = r_.get<uint64_t>();
    size_t limit = 0;
    switch (kind) {
      case static_cast<uint8_t>(plan::Step::Kind::Run): limit = g.blocks.size(); break;
      case static_cast<uint8_t>(plan::Step::Kind::Send):
      case static_cast<uint8_t>(plan::Step::Kind::Recv): limit = g.transfers.size(); break;
      case static_cast<uint8_t>(plan::Step::Kind::Combine): limit = g.combines.size(); break;
      case static_cast<uint8_t>(plan::Step::Kind::Exchange): limit = g.exchanges.size(); break;
      default: r_.reject(cat_str("step kind ", int(kind)));
    }
    if (index >= limit) r_.reject(cat_str("a step names item ", index, " of ", limit));
    return plan::Step{static_cast<plan::Step::Kind>(kind), static_cast<size_t>(index)};
  }

  ByteReader& r_;
  std::unordered_map<uint64_t, NodeRef> local_;
  std::unordered_set<const Node*> made_;
};

}  // namespace

ShardedGraph decode_plan(std::span<const char> bytes, WireIds* ids) {
  ByteReader r(bytes, "plan message");
  r.unseal(kPlanWireMagic, kPlanWireVersion);
  Decoder d(r);
  ShardedGraph g = d.run();
  if (ids) *ids = d.ids();
  return g;
}

PlanChoices decode_choices(std::span<const char> bytes, WireIds* ids) {
  ByteReader r(bytes, "plan message");
  r.unseal(kPlanChoicesMagic, kPlanWireVersion);
  Decoder d(r);
  PlanChoices p = d.choices();
  if (ids) *ids = d.ids();
  return p;
}

}  // namespace tapestry
