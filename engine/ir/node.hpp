// The abstract expression graph: immutable, hash-consed nodes.
//   NodeRef a = make_node(Op::Add, {x, y}, Attrs{}, x->shape, x->dtype);
//   make_node(Op::Add, {x, y}, ...) == a    // same op on same inputs: the same node
// Builders (builders.hpp) validate and infer shapes; make_node only interns.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/op.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry {

struct Value;  // engine/ir/value.hpp: the data of a materialized node

// Per-op attributes, as interned and hashed. Read and written through the typed struct of each
// op (engine/ir/attrs.hpp: attrs_of<SliceAttrs>(n), SliceAttrs{...}.encode()); the fused ops'
// programs through engine/ir/fused.hpp.
struct Attrs {
  std::vector<int64_t> ints;
  std::vector<double> reals;
  DType dtype = DType::F32;
  bool operator==(const Attrs&) const = default;
};

struct Node;
using NodeRef = std::shared_ptr<const Node>;

struct Node : std::enable_shared_from_this<Node> {
  Op op;
  Attrs attrs;
  std::vector<NodeRef> inputs;
  Shape shape;
  DType dtype;
  uint64_t id;  // unique, increasing: creation order
  size_t hash;  // structural hash (op, attrs, input ids, shape, dtype)

  // The materialized data once an observation computed it; a cache, not identity. Written
  // only through set_value (below), which keeps `need` of the inputs right.
  mutable std::shared_ptr<const Value> value;

  // The release rule (node.cpp). need = the HeldNodes on this node + the live consumers that
  // still wait to be computed (no value) and are themselves needed. A node that can be
  // recomputed (it has inputs, or generates: rand, full, ...) and was once held drops its
  // value when need reaches 0: nothing can read it any more except by recomputing, so a loop
  // `u = tp.eval(step(u))` keeps one grid, not every step's. Source data is never dropped.
  mutable std::atomic<int32_t> need{0};
  // On several ranks tp.eval leaves a result sharded where it was computed: `stored` is the
  // stored leaf (engine/store) standing for that value. It counts as computed, like value,
  // and goes under the same rule.
  mutable NodeRef stored;
  mutable std::atomic<int32_t> holders{0};  // the HeldNodes alone (Lua Tensors on this node)
  mutable std::atomic<bool> held_once{false};

  ~Node();

  // The next node in this node's bucket of the intern table (node.cpp; guarded by its mutex).
  mutable const Node* intern_next = nullptr;
};

// Interns the node: returns the live node equal in (op, attrs, inputs, shape, dtype)
// if there is one, else a new one.
NodeRef make_node(Op op, std::vector<NodeRef> inputs, Attrs attrs, Shape shape, DType dtype);

// A fresh Source node holding `value` (never merged with another). `on_destroy`, if given, is
// called with the node's id once it is gone (from whichever thread drops the last reference).
NodeRef make_source(std::shared_ptr<const Value> value, Shape shape, DType dtype,
                    std::function<void(uint64_t)> on_destroy = {});

// Sets (or, with nullptr, clears) n's value, and updates what its inputs are needed for.
void set_value(const Node& n, std::shared_ptr<const Value> v);
// The same for n's stored leaf.
void set_stored(const Node& n, NodeRef leaf);

// A counted reference from outside the graph (a Lua Tensor): while one exists, the node keeps
// its value and every value it waits for.
class HeldNode {
 public:
  HeldNode() = default;
  HeldNode(NodeRef n) { reset(std::move(n)); }  // NOLINT: implicit, like the NodeRef it wraps
  HeldNode(const HeldNode& o) { reset(o.node_); }
  HeldNode& operator=(const HeldNode& o) { return reset(o.node_); }
  HeldNode& operator=(NodeRef n) { return reset(std::move(n)); }
  ~HeldNode() { reset(nullptr); }

  const NodeRef& get() const { return node_; }
  operator const NodeRef&() const { return node_; }  // NOLINT
  const Node* operator->() const { return node_.get(); }
  explicit operator bool() const { return node_ != nullptr; }
  bool operator==(std::nullptr_t) const { return node_ == nullptr; }

 private:
  HeldNode& reset(NodeRef n);
  NodeRef node_;
};

// Number of live interned nodes (for tests and tp.stats()).
size_t live_node_count();

}  // namespace tapestry
