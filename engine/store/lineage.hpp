// Lineage: the expression each stored tensor was computed from, kept while its inputs live, so
// a tensor lost with its MPI job can be computed again (issue 23; Spark's and Ray's way).
//   lineage.record(leaf, expr, is_stored);          // observe_stored: expr is what leaf holds
//   NodeRef e = lineage.rebuild(leaf->id, resolve);  // the same expression over live leaves
//   lineage.forget(dead_ids);                        // the catalog's sweep
// A recipe holds no node of the graph: it is the expression written out as steps (op, attrs,
// inputs by position, shape, dtype), built again on demand, so it keeps nothing alive but a small
// driver-held value. The stored leaves an expression reads (named tensors) are held weakly, so a
// recipe never keeps an old version's shards alive, and it is dropped once any of them is gone.
// `tp.env.w = tp.env.w * 0.9` thus keeps no lineage (its input, the old w, dies at the rebind),
// while `tp.env.w = tp.rand(...)` and `tp.env.v = tp.env.w * 2 + 1` keep one each. Generators
// (rand, randn: counter-based, keyed by seed and element index) recompute exactly; an expression
// that reads a file (a lazy load), a value held by the driver larger than kMaxHeldBytes, or more
// than kMaxNodes nodes is not recorded: recomputing it would not be cheap or not be certain to
// give the same values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"

namespace tapestry {

class Lineage {
 public:
  static constexpr int64_t kMaxHeldBytes = 1 << 20;
  static constexpr size_t kMaxNodes = 4096;

  // Records `expr` as the recipe of the stored leaf `leaf`; is_stored(n) says that n is a
  // stored leaf (held weakly). False when the expression cannot be kept (above).
  bool record(const NodeRef& leaf, const NodeRef& expr, const std::function<bool(const Node&)>& is_stored);
  // The recipe of `leaf` over the leaves resolve(input) gives for its inputs; nullptr when it
  // has none, or an input is gone or resolve gives nullptr (not available now).
  NodeRef rebuild(uint64_t leaf, const std::function<NodeRef(const NodeRef& input)>& resolve) const;
  // The stored leaves the recipe of `leaf` reads that are still alive.
  std::vector<NodeRef> inputs(uint64_t leaf) const;
  bool has(uint64_t leaf) const { return recipes_.count(leaf) != 0; }
  size_t size() const { return recipes_.size(); }
  // Leaves gone: their recipes, and every recipe that reads one of them, are dropped.
  void forget(const std::vector<uint64_t>& dead);

 private:
  struct Step {
    Op op;
    Attrs attrs;
    std::vector<uint32_t> inputs;  // earlier steps
    Shape shape;
    DType dtype;
    std::shared_ptr<const Value> value;  // a Source's (the driver's data)
    int stored = -1;                     // a stored leaf: its index in Recipe::inputs
  };
  struct Recipe {
    std::vector<Step> steps;  // inputs first; the last is the expression
    std::vector<std::weak_ptr<const Node>> inputs;
    std::vector<uint64_t> input_ids;
  };
  void erase(uint64_t leaf);  // its recipe and its entries in by_input_
  std::unordered_map<uint64_t, Recipe> recipes_;
  std::unordered_multimap<uint64_t, uint64_t> by_input_;  // input leaf id -> leaves reading it
};

}  // namespace tapestry
