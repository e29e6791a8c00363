#include "engine/plan/fuse.hpp"

#include <unordered_map>
#include <unordered_set>

#include "engine/ir/error.hpp"

namespace tapestry::plan {

namespace {

// The evaluator's bounds: one program's recursion depth and its instruction count.
constexpr int kMaxFusionDepth = 48;
constexpr int kMaxFusionSize = 96;

// One fused group laid out as a program: its leaves (values from outside), its members in
// emission order (the group's root last), and the instructions.
struct Group {
  FusedProgram program;
  std::vector<const Node*> leaves;
  std::vector<const Node*> members;
};

class Fusion {
 public:
  explicit Fusion(const std::vector<NodeRef>& roots) : roots_(roots) {}

  FusedGraph run() {
    order();
    decide();
    FusedGraph g;
    for (const Node* n : topo_) {
      if (n->value) {
        new_[n] = n->shared_from_this();
      } else if (!inlined_.count(n) && !into_reduce_.count(n)) {
        new_[n] = rebuild(*n, g);
      }
    }
    for (const NodeRef& r : roots_) g.roots.push_back(rebuilt(r.get()));
    return g;
  }

 private:
  // Post-order DFS from the roots, stopping at nodes that hold a value.
  void order() {
    std::unordered_set<const Node*> seen;
    std::vector<std::pair<const Node*, size_t>> stack;
    for (const NodeRef& r : roots_) {
      root_set_.insert(r.get());
      if (seen.insert(r.get()).second) stack.push_back({r.get(), 0});
      while (!stack.empty()) {
        auto& [n, next] = stack.back();
        if (n->value || next == n->inputs.size()) {
          topo_.push_back(n);
          stack.pop_back();
          continue;
        }
        const Node* in = n->inputs[next++].get();
        if (seen.insert(in).second) stack.push_back({in, 0});
      }
    }
  }

  // Consumers first (reverse topological order), so a producer knows its consumer's group.
  void decide() {
    std::unordered_map<const Node*, const Node*> sole_consumer;
    std::unordered_set<const Node*> shared, feeds_non_map;
    for (const Node* n : topo_) {
      if (n->value) continue;
      for (const NodeRef& in : n->inputs) {
        auto [it, fresh] = sole_consumer.emplace(in.get(), n);
        if (!fresh && it->second != n) shared.insert(in.get());
        if (op_kind(n->op) != OpKind::Map) feeds_non_map.insert(in.get());
      }
    }
    for (auto it = topo_.rbegin(); it != topo_.rend(); ++it) {
      const Node* n = *it;
      if (n->value || root_set_.count(n)) continue;
      const bool is_map = op_kind(n->op) == OpKind::Map;
      const bool is_const = n->op == Op::Full;
      if (!is_map && !is_const) continue;
      auto c = sole_consumer.find(n);
      if (c == sole_consumer.end()) continue;
      const Node* consumer = c->second;
      if (op_kind(consumer->op) == OpKind::Reduce) {
        // The reduction reads the map's value once, where the program produces it.
        if (is_map && !shared.count(n)) {
          into_reduce_.insert(n);
          reduce_of_[consumer] = n;
        }
        continue;
      }
      if (op_kind(consumer->op) != OpKind::Map) continue;
      // A constant can be re-emitted in every map that reads it, but a non-map needs it in memory.
      if (feeds_non_map.count(n) || (!is_const && shared.count(n))) continue;
      const Node* group = group_root_.count(consumer) ? group_root_[consumer] : consumer;
      const int depth = depth_[consumer] + 1;
      if (depth > kMaxFusionDepth || group_size_[group] >= kMaxFusionSize) continue;
      inlined_.insert(n);
      group_root_[n] = group;
      depth_[n] = depth;
      ++group_size_[group];
    }
  }

  NodeRef rebuilt(const Node* n) const {
    auto it = new_.find(n);
    internal_check(it != new_.end());
    return it->second;
  }

  std::vector<NodeRef> rebuilt_inputs(const std::vector<const Node*>& ins) const {
    std::vector<NodeRef> out;
    for (const Node* in : ins) out.push_back(rebuilt(in));
    return out;
  }

  NodeRef rebuild(const Node& n, FusedGraph& g) {
    if (auto r = reduce_of_.find(&n); r != reduce_of_.end()) {
      const Group grp = group_of(r->second);
      FusedReduction fr{n.op, std::vector<int>(n.attrs.ints.begin(), n.attrs.ints.end()),
                        r->second->shape, grp.program};
      NodeRef f = make_node(Op::FusedReduce, rebuilt_inputs(grp.leaves), encode_fused_reduce(fr),
                            n.shape, n.dtype);
      record(g, f, grp, &n);
      return f;
    }
    if (op_kind(n.op) == OpKind::Map) {
      const Group grp = group_of(&n);
      if (grp.program.instrs.size() > 1) {
        NodeRef f = make_node(Op::FusedMap, rebuilt_inputs(grp.leaves),
                              encode_fused_map(grp.program), n.shape, n.dtype);
        record(g, f, grp, nullptr);
        return f;
      }
    }
    // Not fused itself: the same op over the rewritten inputs (the node itself when none changed).
    std::vector<NodeRef> ins;
    bool same = true;
    for (const NodeRef& in : n.inputs) {
      ins.push_back(rebuilt(in.get()));
      same = same && ins.back() == in;
    }
    if (same) return n.shared_from_this();
    return make_node(n.op, std::move(ins), n.attrs, n.shape, n.dtype);
  }

  void record(FusedGraph& g, const NodeRef& f, const Group& grp, const Node* reduce) {
    std::vector<NodeRef> members;
    for (const Node* m : grp.members) {
      members.push_back(m->shared_from_this());
      if (op_kind(m->op) == OpKind::Map) ++g.fused_ops;
    }
    if (reduce) members.push_back(reduce->shared_from_this());
    else --g.fused_ops;  // the group's root map lives on as the fused node
    g.origin.emplace(f->id, std::move(members));
  }

  bool in_group(const Node* n, const Node* root) const { return n == root || inlined_.count(n); }

  Group group_of(const Node* root) const {
    Group grp;
    std::unordered_map<const Node*, int> reg;
    std::unordered_set<const Node*> visited;
    collect_leaves(root, root, grp, reg, visited);
    emit(root, root, grp, reg);
    return grp;
  }

  // Leaves (values computed outside the group) take the first registers, in input order.
  void collect_leaves(const Node* n, const Node* root, Group& grp,
                      std::unordered_map<const Node*, int>& reg,
                      std::unordered_set<const Node*>& visited) const {
    if (in_group(n, root)) {
      if (!visited.insert(n).second) return;  // a DAG: x*x must not double the walk
      for (const NodeRef& in : n->inputs) collect_leaves(in.get(), root, grp, reg, visited);
      return;
    }
    if (reg.emplace(n, static_cast<int>(grp.leaves.size())).second) {
      grp.leaves.push_back(n);
      ++grp.program.num_leaves;
    }
  }

  // Instructions in dependency order; returns n's register.
  int emit(const Node* n, const Node* root, Group& grp, std::unordered_map<const Node*, int>& reg) const {
    if (auto it = reg.find(n); it != reg.end()) return it->second;
    internal_check(in_group(n, root));
    FusedInstr ins{n->op, n->dtype, n->dtype};
    if (n->op == Op::Full) {
      ins.real = n->attrs.reals.at(0);
      ins.integer = n->attrs.ints.at(0);
    } else {
      int* args[3] = {&ins.a, &ins.b, &ins.c};
      internal_check(n->inputs.size() <= 3);
      for (size_t i = 0; i < n->inputs.size(); ++i) *args[i] = emit(n->inputs[i].get(), root, grp, reg);
      ins.in = n->inputs.back()->dtype;  // Where: the dtype of a and b; Cast: the source
    }
    grp.program.instrs.push_back(ins);
    grp.members.push_back(n);
    const int r = grp.program.num_leaves + static_cast<int>(grp.program.instrs.size()) - 1;
    reg[n] = r;
    return r;
  }

  std::vector<NodeRef> roots_;
  std::unordered_set<const Node*> root_set_;
  std::vector<const Node*> topo_;
  std::unordered_set<const Node*> inlined_;      // members of a map group other than its root
  std::unordered_set<const Node*> into_reduce_;  // group roots folded into their reduction
  std::unordered_map<const Node*, const Node*> reduce_of_;  // reduction -> the map it absorbs
  std::unordered_map<const Node*, const Node*> group_root_;
  std::unordered_map<const Node*, int> depth_;
  std::unordered_map<const Node*, int> group_size_;
  std::unordered_map<const Node*, NodeRef> new_;  // original -> its node in the fused graph
};

}  // namespace

FusedGraph fuse(const std::vector<NodeRef>& roots) { return Fusion(roots).run(); }

}  // namespace tapestry::plan
