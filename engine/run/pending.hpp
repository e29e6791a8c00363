// Pending operations: small operations on computed host tensors kept as records instead of
// graph nodes, run op by op when observed (one rank, no device). A loop of small observations
// (a CG iteration: eleven operations and five observations on vectors of a few hundred
// elements) spends its time building nodes (interning, the release rule) and setting up
// evaluations, not computing; a record costs a few dozen bytes and an observation of one runs
// its kernels directly.
//   PendingRef r = record_binary(Op::Mul, PendingArg::of(p), PendingArg::number(2.0));
//   if (r && compute(*r, stats)) read(r->value());   // null r: not recordable, build a node
//   NodeRef n = build_node(*r);   // what the builders make of it (with its value, if computed)
// A record is made only where the builders could not fail (same shapes, one float dtype), so
// errors still come from the operation that caused them; build_node gives tp.grad, plans,
// printing and everything else the graph they read. Values are bit for bit the evaluator's:
// the same kernels (run_reduce, run_matmul) and single IEEE operations for maps.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/ir/node.hpp"
#include "engine/ir/value.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry {

class Pending;

// An owning reference. Records belong to one Lua state (one thread): the count is plain.
class PendingRef {
 public:
  PendingRef() = default;
  explicit PendingRef(Pending* p);
  PendingRef(const PendingRef& o) : PendingRef(o.p_) {}
  PendingRef(PendingRef&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  PendingRef& operator=(PendingRef o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~PendingRef() { reset(); }
  void reset();
  Pending* get() const { return p_; }
  Pending* operator->() const { return p_; }
  Pending& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  friend struct PendingRules;
  Pending* p_ = nullptr;
};

// A reference from a Lua Tensor: while one exists the record keeps its value, and an
// uncomputed one keeps the values it will read (the release rule of node.hpp, for records).
class HeldPending {
 public:
  HeldPending() = default;
  HeldPending(const HeldPending&) = delete;
  HeldPending& operator=(const HeldPending&) = delete;
  ~HeldPending() { reset(); }
  void hold(PendingRef r);
  void reset();
  Pending* get() const { return ref_.get(); }
  Pending* operator->() const { return ref_.get(); }
  explicit operator bool() const { return static_cast<bool>(ref_); }

 private:
  PendingRef ref_;
};

// An operand as a binding sees it: a record, a node, or a Lua number.
struct PendingArg {
  Pending* rec = nullptr;
  const NodeRef* node = nullptr;
  bool number = false;
  bool integer = false;  // a Lua integer (the builders keep its kind)
  double real = 0;
  int64_t int_value = 0;

  static PendingArg of(Pending* r) { return {r}; }
  static PendingArg of(const NodeRef& n) { return {nullptr, &n}; }
  static PendingArg of_number(double v) { return {nullptr, nullptr, true, false, v}; }
  static PendingArg of_integer(int64_t v) {
    return {nullptr, nullptr, true, true, static_cast<double>(v), v};
  }
};

// The largest result a record may have: past it a fused kernel's single pass over memory and
// the planner's parallel blocks pay for the nodes.
inline constexpr int64_t kPendingMaxElems = 4096;
// Records waiting on uncomputed records, at most this deep (compute recurses).
inline constexpr int kPendingMaxDepth = 64;

// Null where the operation is not recordable; then the caller builds nodes as always.
// a op b for Add, Sub, Mul, Div: tensors of one float dtype and one shape, or a tensor and a number.
PendingRef record_binary(Op op, const PendingArg& a, const PendingArg& b);
// x:sum() over every dim (x at least 1-D and not empty).
PendingRef record_sum(const PendingArg& x);
// a:matmul(b) for a 2-D a and a 1-D b of one float dtype, neither itself a recorded product.
PendingRef record_matmul(const PendingArg& a, const PendingArg& b);

// Computes r and the records it waits on, counting kernels in st. False, with nothing
// changed but values computed on the way, when a node it reads no longer holds its value
// (then build the node and observe that).
bool compute(Pending& r, Stats& st);

// The node the builders make for r (built once, with r's inputs' nodes, and given r's value
// if it has one). Iterative: a loop's history is thousands of records deep.
NodeRef build_node(Pending& r);

class Pending {
 public:
  enum class Kind : uint8_t { Map, Sum, Matmul };
  struct Input {
    PendingRef rec;
    NodeRef node;
  };

  Kind kind() const { return kind_; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  // The computed data (contiguous), or null.
  const std::shared_ptr<const Value>& value() const { return value_; }
  // The node once build_node made it, or null.
  const NodeRef& node() const { return node_; }

 private:
  friend class PendingRef;
  friend class HeldPending;
  friend PendingRef record_binary(Op, const PendingArg&, const PendingArg&);
  friend PendingRef record_sum(const PendingArg&);
  friend PendingRef record_matmul(const PendingArg&, const PendingArg&);
  friend bool compute(Pending&, Stats&);
  friend NodeRef build_node(Pending&);
  friend struct PendingRules;

  int refs_ = 0;     // PendingRefs: Lua Tensors and consumer records
  int holders_ = 0;  // Lua Tensors (HeldPending)
  int waiters_ = 0;  // input edges of uncomputed records that are themselves needed
  int depth_ = 1;    // 1 + the deepest uncomputed record input, when made
  Kind kind_ = Kind::Map;
  Op op_ = Op::Add;
  DType dtype_ = DType::F32;
  int num_inputs_ = 0;
  Input in_[2];
  // Map with a number: which side (0 = left, 1 = right) and its value as the builders take it.
  int number_side_ = -1;
  bool number_integer_ = false;
  double number_ = 0;
  int64_t number_int_ = 0;
  Shape shape_;
  int64_t numel_ = 1;
  std::shared_ptr<const Value> value_;
  NodeRef node_;
};

}  // namespace tapestry
