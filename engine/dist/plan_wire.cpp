// Layout (native byte order: every rank of a job runs this same build on one architecture):
//   header: magic u32, version u32, body length u64, FNV-1a-64 of the body u64
//   body:   ranks u32; nodes; initial; blocks; transfers; combines; steps per rank; roots; outputs
// Counts are u64 and checked against the bytes left, so a corrupt count cannot make the
// decoder allocate gigabytes before failing.
#include "engine/dist/plan_wire.hpp"

#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "engine/ir/error.hpp"

namespace tapestry {

namespace {

using plan::ShardedGraph;
using poly::Box;

constexpr size_t kHeaderBytes = 24;
constexpr uint32_t kMaxDims = 64;
constexpr uint32_t kMaxRanks = 1 << 20;

uint64_t fnv1a(const char* p, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ULL;
  return h;
}

[[noreturn]] void reject(const std::string& why) { throw Error("plan message rejected: " + why); }

class Writer {
 public:
  template <class T> void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void count(size_t n) { put<uint64_t>(n); }
  void ints(const std::vector<int64_t>& v) {
    count(v.size());
    for (int64_t x : v) put(x);
  }
  void box(const Box& b) {
    put<uint32_t>(static_cast<uint32_t>(b.lo.size()));
    for (int64_t x : b.lo) put(x);
    for (int64_t x : b.hi) put(x);
  }
  void shard(const plan::Shard& s) {
    put(s.tensor);
    box(s.box);
    put<int32_t>(s.rank);
  }
  std::vector<char> take() { return std::move(out_); }

 private:
  std::vector<char> out_;
};

class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), end_(p + n) {}
  template <class T> T get(const char* what) {
    if (static_cast<size_t>(end_ - p_) < sizeof(T)) reject(cat_str("truncated in ", what));
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  // A count of items of at least `min_bytes` each: no more than the bytes left can hold.
  size_t count(const char* what, size_t min_bytes) {
    const uint64_t n = get<uint64_t>(what);
    if (n > static_cast<size_t>(end_ - p_) / min_bytes) reject(cat_str("count of ", what, " (", n, ") exceeds the message"));
    return static_cast<size_t>(n);
  }
  std::vector<int64_t> ints(const char* what) {
    std::vector<int64_t> v(count(what, 8));
    for (int64_t& x : v) x = get<int64_t>(what);
    return v;
  }
  Box box(const char* what) {
    const uint32_t dims = get<uint32_t>(what);
    if (dims > kMaxDims) reject(cat_str("a box of ", what, " has ", dims, " dims"));
    Box b;
    b.lo.resize(dims);
    b.hi.resize(dims);
    for (int64_t& x : b.lo) x = get<int64_t>(what);
    for (int64_t& x : b.hi) x = get<int64_t>(what);
    return b;
  }
  bool at_end() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

bool is_leaf(const Node& n) { return n.value != nullptr || n.op == Op::Source; }

// The plan's nodes and every node they read, inputs first, stopping at leaves. A plan may
// name a node without the nodes it reads (a Constrain's or fused group's input that no block
// computes), and make_node on the worker needs each input before its consumer.
std::vector<const Node*> closure(const ShardedGraph& g) {
  std::vector<const Node*> order;
  std::unordered_set<const Node*> seen;
  std::vector<std::pair<const Node*, size_t>> stack;  // iterative: chains can be long
  for (const NodeRef& root : g.nodes) {
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

}  // namespace

std::vector<char> encode_plan(const ShardedGraph& g) {
  Writer w;
  w.put<uint32_t>(static_cast<uint32_t>(g.num_ranks));
  const std::vector<const Node*> nodes = closure(g);
  w.count(nodes.size());
  for (const Node* n : nodes) {
    w.put(n->id);
    w.put<uint8_t>(is_leaf(*n) ? 1 : 0);
    w.put<uint16_t>(static_cast<uint16_t>(n->op));
    w.put<uint8_t>(static_cast<uint8_t>(n->dtype));
    w.ints(n->shape);
    if (is_leaf(*n)) continue;
    w.put<uint8_t>(static_cast<uint8_t>(n->attrs.dtype));
    w.ints(n->attrs.ints);
    w.count(n->attrs.reals.size());
    for (double r : n->attrs.reals) w.put(r);
    w.count(n->inputs.size());
    for (const NodeRef& in : n->inputs) w.put(in->id);
  }
  w.count(g.initial.size());
  for (const plan::Shard& s : g.initial) w.shard(s);
  w.count(g.blocks.size());
  for (const plan::Block& b : g.blocks) {
    w.put(b.node);
    w.box(b.box);
    w.put<int32_t>(b.rank);
  }
  w.count(g.transfers.size());
  for (const plan::Transfer& t : g.transfers) {
    w.put(t.tensor);
    w.box(t.slice);
    w.put<int32_t>(t.from);
    w.put<int32_t>(t.to);
  }
  w.count(g.combines.size());
  for (const plan::Combine& c : g.combines) {
    w.put(c.node);
    w.put<uint8_t>(static_cast<uint8_t>(c.kind));
    w.count(c.partials.size());
    for (size_t p : c.partials) w.put<uint64_t>(p);
    w.box(c.out);
    w.count(c.dest.size());
    for (plan::Rank d : c.dest) w.put<int32_t>(d);
  }
  for (const auto& steps : g.steps) {
    w.count(steps.size());
    for (const plan::Step& s : steps) {
      w.put<uint8_t>(static_cast<uint8_t>(s.kind));
      w.put<uint64_t>(s.index);
    }
  }
  w.count(g.roots.size());
  for (uint64_t r : g.roots) w.put(r);
  w.count(g.outputs.size());
  for (const plan::Shard& s : g.outputs) w.shard(s);
  const std::vector<char> body = w.take();

  Writer h;
  h.put(kPlanWireMagic);
  h.put(kPlanWireVersion);
  h.put<uint64_t>(body.size());
  h.put<uint64_t>(fnv1a(body.data(), body.size()));
  std::vector<char> out = h.take();
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

namespace {

// Decodes the body into `g`, mapping rank 0's node ids to the nodes rebuilt here.
class Decoder {
 public:
  explicit Decoder(Reader& r) : r_(r) {}

  ShardedGraph run() {
    const uint32_t ranks = r_.get<uint32_t>("the rank count");
    if (ranks < 1 || ranks > kMaxRanks) reject(cat_str("bad rank count ", ranks));
    ShardedGraph g(static_cast<int>(ranks));
    nodes(g);
    for (size_t i = 0, n = r_.count("initial shards", 16); i < n; ++i) g.initial.push_back(shard(g, "initial shards"));
    for (size_t i = 0, n = r_.count("blocks", 16); i < n; ++i) {
      const uint64_t node = id(r_.get<uint64_t>("blocks"), "a block");
      Box box = r_.box("blocks");
      g.blocks.push_back(plan::Block{node, std::move(box), rank(g, r_.get<int32_t>("blocks"))});
    }
    for (size_t i = 0, n = r_.count("transfers", 20); i < n; ++i) {
      const uint64_t tensor = id(r_.get<uint64_t>("transfers"), "a transfer");
      Box slice = r_.box("transfers");
      const int from = rank(g, r_.get<int32_t>("transfers"));
      const int to = rank(g, r_.get<int32_t>("transfers"));
      if (from == to) reject("a transfer from a rank to itself");
      g.transfers.push_back(plan::Transfer{tensor, std::move(slice), from, to});
    }
    for (size_t i = 0, n = r_.count("combines", 25); i < n; ++i) g.combines.push_back(combine(g));
    for (auto& steps : g.steps) {
      for (size_t i = 0, n = r_.count("steps", 9); i < n; ++i) steps.push_back(step(g));
    }
    for (size_t i = 0, n = r_.count("roots", 8); i < n; ++i) g.roots.push_back(id(r_.get<uint64_t>("roots"), "a root"));
    for (size_t i = 0, n = r_.count("outputs", 16); i < n; ++i) g.outputs.push_back(shard(g, "outputs"));
    if (!r_.at_end()) reject("bytes left after the plan");
    return g;
  }

 private:
  void nodes(ShardedGraph& g) {
    const size_t n = r_.count("nodes", 16);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t wire_id = r_.get<uint64_t>("nodes");
      const bool leaf = r_.get<uint8_t>("nodes") != 0;
      const uint16_t op = r_.get<uint16_t>("nodes");
      const uint8_t dtype = r_.get<uint8_t>("nodes");
      if (op >= kNumOps) reject(cat_str("node ", wire_id, " has op number ", op));
      if (dtype >= kNumDTypes) reject(cat_str("node ", wire_id, " has dtype number ", int(dtype)));
      const Shape shape = r_.ints("a shape");
      if (shape.size() > kMaxDims) reject(cat_str("node ", wire_id, " has ", shape.size(), " dims"));
      for (int64_t e : shape)
        if (e < 0) reject(cat_str("node ", wire_id, " has a negative extent"));
      if (local_.count(wire_id)) reject(cat_str("node ", wire_id, " is listed twice"));
      NodeRef made;
      if (leaf) {
        // Its data stays on rank 0; the plan moves the slices this rank reads.
        made = make_source(nullptr, shape, static_cast<DType>(dtype));
      } else {
        if (static_cast<Op>(op) == Op::Source) reject(cat_str("source node ", wire_id, " is not a leaf"));
        Attrs a;
        const uint8_t adt = r_.get<uint8_t>("attrs");
        if (adt >= kNumDTypes) reject(cat_str("node ", wire_id, " has attribute dtype ", int(adt)));
        a.dtype = static_cast<DType>(adt);
        a.ints = r_.ints("attrs");
        a.reals.resize(r_.count("attrs", 8));
        for (double& x : a.reals) x = r_.get<double>("attrs");
        std::vector<NodeRef> inputs(r_.count("inputs", 8));
        for (NodeRef& in : inputs) {
          const uint64_t in_id = r_.get<uint64_t>("inputs");
          auto it = local_.find(in_id);
          if (it == local_.end()) reject(cat_str("node ", wire_id, " reads node ", in_id, ", not listed before it"));
          in = it->second;
        }
        const int arity = op_def(static_cast<Op>(op)).arity;
        if (arity >= 0 && static_cast<size_t>(arity) != inputs.size())
          reject(cat_str("node ", wire_id, " (", op_def(static_cast<Op>(op)).name, ") has ", inputs.size(), " inputs"));
        made = make_node(static_cast<Op>(op), std::move(inputs), std::move(a), shape, static_cast<DType>(dtype));
      }
      // Distinct nodes on rank 0 are distinct in structure, so they stay distinct here.
      if (!made_.insert(made.get()).second) reject(cat_str("node ", wire_id, " duplicates another node"));
      local_[wire_id] = made;
      g.nodes.push_back(made);
    }
  }

  uint64_t id(uint64_t wire_id, const char* what) const {
    auto it = local_.find(wire_id);
    if (it == local_.end()) reject(cat_str(what, " names node ", wire_id, ", which the plan does not list"));
    return it->second->id;
  }

  int rank(const ShardedGraph& g, int32_t r) const {
    if (r < 0 || r >= g.num_ranks) reject(cat_str("rank ", r, " is outside the mesh of ", g.num_ranks));
    return r;
  }

  plan::Shard shard(const ShardedGraph& g, const char* what) {
    const uint64_t tensor = id(r_.get<uint64_t>(what), what);
    Box box = r_.box(what);
    return plan::Shard{tensor, std::move(box), rank(g, r_.get<int32_t>(what))};
  }

  plan::Combine combine(const ShardedGraph& g) {
    plan::Combine c;
    c.node = id(r_.get<uint64_t>("combines"), "a combine");
    const uint8_t kind = r_.get<uint8_t>("combines");
    if (kind > static_cast<uint8_t>(poly::CombineKind::ArgMin)) reject(cat_str("combine kind ", int(kind)));
    c.kind = static_cast<poly::CombineKind>(kind);
    c.partials.resize(r_.count("combine partials", 8));
    for (size_t& p : c.partials) {
      p = r_.get<uint64_t>("combine partials");
      if (p >= g.blocks.size()) reject(cat_str("a combine merges block ", p, " of ", g.blocks.size()));
    }
    c.out = r_.box("combines");
    c.dest.resize(r_.count("combine destinations", 4));
    for (plan::Rank& d : c.dest) d = rank(g, r_.get<int32_t>("combines"));
    return c;
  }

  plan::Step step(const ShardedGraph& g) {
    const uint8_t kind = r_.get<uint8_t>("steps");
    const uint64_t index = r_.get<uint64_t>("steps");
    size_t limit = 0;
    switch (kind) {
      case static_cast<uint8_t>(plan::Step::Kind::Run): limit = g.blocks.size(); break;
      case static_cast<uint8_t>(plan::Step::Kind::Send):
      case static_cast<uint8_t>(plan::Step::Kind::Recv): limit = g.transfers.size(); break;
      case static_cast<uint8_t>(plan::Step::Kind::Combine): limit = g.combines.size(); break;
      default: reject(cat_str("step kind ", int(kind)));
    }
    if (index >= limit) reject(cat_str("a step names item ", index, " of ", limit));
    return plan::Step{static_cast<plan::Step::Kind>(kind), static_cast<size_t>(index)};
  }

  Reader& r_;
  std::unordered_map<uint64_t, NodeRef> local_;
  std::unordered_set<const Node*> made_;
};

}  // namespace

ShardedGraph decode_plan(std::span<const char> bytes) {
  Reader h(bytes.data(), bytes.size());
  if (bytes.size() < kHeaderBytes) reject(cat_str("only ", bytes.size(), " bytes"));
  if (h.get<uint32_t>("the header") != kPlanWireMagic) reject("not a plan (bad magic)");
  const uint32_t version = h.get<uint32_t>("the header");
  if (version != kPlanWireVersion)
    reject(cat_str("wire version ", version, ", this build reads ", kPlanWireVersion, " (mixed builds in one job?)"));
  const uint64_t length = h.get<uint64_t>("the header");
  const uint64_t sum = h.get<uint64_t>("the header");
  if (length != bytes.size() - kHeaderBytes)
    reject(cat_str("the header says ", length, " bytes of plan, the message has ", bytes.size() - kHeaderBytes));
  const char* body = bytes.data() + kHeaderBytes;
  if (fnv1a(body, length) != sum) reject("checksum mismatch (corrupted in transit)");
  Reader r(body, length);
  return Decoder(r).run();
}

}  // namespace tapestry
