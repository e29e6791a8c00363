#include "engine/store/lineage.hpp"

#include <iterator>
#include <unordered_map>

namespace tapestry {

bool Lineage::record(const NodeRef& leaf, const NodeRef& expr,
                     const std::function<bool(const Node&)>& is_stored) {
  if (!leaf || !expr || leaf == expr) return false;
  Recipe rec;
  std::unordered_map<const Node*, uint32_t> step_of;
  // Post-order over the expression: a step's inputs are written before it.
  std::vector<std::pair<const Node*, size_t>> stack{{expr.get(), 0}};
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next == 0 && !step_of.count(n)) {
      if (rec.steps.size() >= kMaxNodes) return false;
      Step leaf_step{n->op, {}, {}, n->shape, n->dtype, nullptr, -1};
      bool is_leaf = true;
      if (is_stored(*n)) {
        leaf_step.stored = static_cast<int>(rec.inputs.size());
        rec.inputs.push_back(n->shared_from_this());
        rec.input_ids.push_back(n->id);
      } else if (n->op == Op::Load) {
        return false;  // a file may change: not certain to be the same
      } else if (n->op == Op::Source) {
        // The driver's data (tp.tensor): kept by the recipe, while small. A Source without a
        // value that is not stored is a lost tensor: not recomputable.
        if (!n->value ||
            n->value->view().numel() * static_cast<int64_t>(dtype_size(n->dtype)) > kMaxHeldBytes)
          return false;
        leaf_step.value = n->value;
      } else {
        is_leaf = false;
      }
      if (is_leaf) {
        step_of[n] = static_cast<uint32_t>(rec.steps.size());
        rec.steps.push_back(std::move(leaf_step));
        stack.pop_back();
        continue;
      }
    }
    if (next < n->inputs.size()) {
      const Node* in = n->inputs[next++].get();
      if (!step_of.count(in)) stack.push_back({in, 0});
      continue;
    }
    if (!step_of.count(n)) {
      Step st{n->op, n->attrs, {}, n->shape, n->dtype, nullptr, -1};
      for (const NodeRef& in : n->inputs) st.inputs.push_back(step_of.at(in.get()));
      step_of[n] = static_cast<uint32_t>(rec.steps.size());
      rec.steps.push_back(std::move(st));
    }
    stack.pop_back();
  }
  // The expression must be the last step (it is, unless it was a leaf itself).
  if (rec.steps.empty() || step_of.at(expr.get()) != rec.steps.size() - 1) return false;
  erase(leaf->id);  // a leaf has one recipe
  for (uint64_t in : rec.input_ids) by_input_.emplace(in, leaf->id);
  recipes_[leaf->id] = std::move(rec);
  return true;
}

NodeRef Lineage::rebuild(uint64_t leaf, const std::function<NodeRef(const NodeRef&)>& resolve) const {
  auto it = recipes_.find(leaf);
  if (it == recipes_.end()) return nullptr;
  const Recipe& rec = it->second;
  std::vector<NodeRef> inputs;
  for (const auto& weak : rec.inputs) {
    NodeRef in = weak.lock();
    NodeRef use = in ? resolve(in) : nullptr;
    if (!use) return nullptr;
    inputs.push_back(std::move(use));
  }
  std::vector<NodeRef> built;
  built.reserve(rec.steps.size());
  for (const Step& st : rec.steps) {
    if (st.stored >= 0) {
      built.push_back(inputs[static_cast<size_t>(st.stored)]);
    } else if (st.op == Op::Source) {
      built.push_back(make_source(st.value, st.shape, st.dtype));
    } else {
      std::vector<NodeRef> ins;
      for (uint32_t i : st.inputs) ins.push_back(built[i]);
      built.push_back(make_node(st.op, std::move(ins), st.attrs, st.shape, st.dtype));
    }
  }
  return built.back();
}

std::vector<NodeRef> Lineage::inputs(uint64_t leaf) const {
  std::vector<NodeRef> out;
  auto it = recipes_.find(leaf);
  if (it == recipes_.end()) return out;
  for (const auto& weak : it->second.inputs)
    if (NodeRef in = weak.lock()) out.push_back(std::move(in));
  return out;
}

void Lineage::erase(uint64_t leaf) {
  auto it = recipes_.find(leaf);
  if (it == recipes_.end()) return;
  for (uint64_t in : it->second.input_ids) {
    auto [b, e] = by_input_.equal_range(in);
    for (auto r = b; r != e;) r = r->second == leaf ? by_input_.erase(r) : std::next(r);
  }
  recipes_.erase(it);
}

void Lineage::forget(const std::vector<uint64_t>& dead) {
  for (uint64_t id : dead) {
    // A recipe that reads a dead leaf can never be rebuilt; the leaves it computed live on.
    std::vector<uint64_t> readers;
    auto [b, e] = by_input_.equal_range(id);
    for (auto r = b; r != e; ++r) readers.push_back(r->second);
    for (uint64_t r : readers) erase(r);
    erase(id);
  }
}

}  // namespace tapestry
