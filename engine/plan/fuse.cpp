#include "engine/plan/fuse.hpp"

#include <unordered_map>
#include <unordered_set>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "engine/plan/fusion_groups.hpp"

namespace tapestry::plan {

namespace {

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
  // The rules are group_fusion's, shared with the single-rank evaluator.
  void decide() {
    const FusionGroups fg = group_fusion(roots_);
    for (int i : fg.order) {
      const Node* n = fg.nodes[static_cast<size_t>(i)];
      topo_.push_back(n);
      if (fg.inlined[static_cast<size_t>(i)]) inlined_.insert(n);
      if (const int m = fg.absorbs[static_cast<size_t>(i)]; m >= 0) {
        reduce_of_[n] = fg.nodes[static_cast<size_t>(m)];
        into_reduce_.insert(fg.nodes[static_cast<size_t>(m)]);
      }
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
      FusedReduction fr{n.op, attrs_of<ReduceAttrs>(n).dims, r->second->shape, grp.program};
      NodeRef f =
          make_node(Op::FusedReduce, rebuilt_inputs(grp.leaves), encode_fused_reduce(fr), n.shape, n.dtype);
      record(g, f, grp, &n);
      return f;
    }
    if (op_kind(n.op) == OpKind::Map) {
      const Group grp = group_of(&n);
      if (grp.program.instrs.size() > 1) {
        NodeRef f = make_node(Op::FusedMap, rebuilt_inputs(grp.leaves), encode_fused_map(grp.program),
                              n.shape, n.dtype);
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
  void collect_leaves(const Node* n, const Node* root, Group& grp, std::unordered_map<const Node*, int>& reg,
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
    MapInstr ins{n->op, n->dtype, n->dtype};
    if (n->op == Op::Full) {
      const FullAttrs c = attrs_of<FullAttrs>(*n);
      ins.real = c.real;
      ins.integer = c.integer;
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
  std::vector<const Node*> topo_;
  std::unordered_set<const Node*> inlined_;                 // members of a map group other than its root
  std::unordered_set<const Node*> into_reduce_;             // group roots folded into their reduction
  std::unordered_map<const Node*, const Node*> reduce_of_;  // reduction -> the map it absorbs
  std::unordered_map<const Node*, NodeRef> new_;            // original -> its node in the fused graph
};

}  // namespace

FusedGraph fuse(const std::vector<NodeRef>& roots) { return Fusion(roots).run(); }

}  // namespace tapestry::plan
