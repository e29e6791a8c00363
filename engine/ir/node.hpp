// The abstract expression graph: immutable, hash-consed nodes.
//   NodeRef a = make_node(Op::Add, {x, y}, Attrs{}, x->shape, x->dtype);
//   make_node(Op::Add, {x, y}, ...) == a    // same op on same inputs: the same node
// Builders (builders.hpp) validate and infer shapes; make_node only interns.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/op.hpp"
#include "engine/ir/shape.hpp"

namespace tapestry {

struct Value;  // engine/ir/value.hpp: the data of a materialized node

// Per-op attributes. Meaning by op:
//   Cast: dtype (target)            Full: reals[0] (value), ints[0] (exact integer value)
//   Arange: reals {first, step}, ints {first, step} (exact for integer dtypes)
//   Linspace: reals {a, b}          Eye: none (shape {n, m})
//   Rand, Randn: ints {seed}        Source: ints {unique id}
//   Reduce ops: ints = reduced dims, 0-based ascending; output drops them
//   ArgMax/ArgMin: ints {dim} (0-based), or {} for the flat index; output drops the dim
//   Reshape: none (shape)           Permute: ints = perm (output dim i = input dim perm[i])
//   Expand: none (output shape; input rank <= output rank, aligned at the right)
//   Slice: ints = {start_0..start_{r-1}, step_0..step_{r-1}} (0-based; shape = counts)
//   Constrain: ints = parts per dim (1 = not split): the layout the planner must give it
//   Cat: ints {dim}
//   WriteRegion: ints = start per dim (0-based); inputs {base, value}, value's shape = the box
//   Correlate: ints = {pad_before per dim, then pad_after per dim}; inputs {x, k} of one rank
//     and dtype; out[y] = sum_r x[y - pad_before + r] * k[r], x read as 0 outside its bounds
//   Conv2d: ints = {stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups};
//     inputs {x {N,C,H,W}, w {O,C/groups,KH,KW}}, one dtype; output {N,O,OH,OW}
//   MaxPool2d, AvgPool2d: ints = {kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w}
//   FusedMap (made by fusion only): inputs = the group's leaves, all of the output's shape;
//     ints = {n_instr, then per instruction: op, out dtype, in dtype, a, b, c, integer},
//     reals = {real per instruction}; registers: leaves 0..L-1, then instruction j is L + j;
//     the last instruction is the result (cpu::MapProgram, field for field)
//   FusedReduce: ints = {reduce op, rank, program shape..., n_dims, dims..., then FusedMap's
//     ints}, reals as FusedMap; the program (over the leaves) is reduced over dims
//   Encoding, decoding and describe_fused: engine/ir/fused.hpp
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
  uint64_t id;    // unique, increasing: creation order
  size_t hash;    // structural hash (op, attrs, input ids, shape, dtype)

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

// A fresh Source node holding `value` (never merged with another).
NodeRef make_source(std::shared_ptr<const Value> value, Shape shape, DType dtype);

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
