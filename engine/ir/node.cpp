#include "engine/ir/node.hpp"

#include "engine/ir/dtype_support.hpp"

#include <bit>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

#include "engine/ir/attrs.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/spin_lock.hpp"

namespace tapestry {

namespace {

// The intern table: hash -> live nodes with that hash. Nodes remove themselves
// on destruction, so the table never holds a dead node. Chained through Node::intern_next
// (no allocation per node: a loop that builds and drops small graphs creates thousands
// of nodes a second), buckets a power of two, picked by the hash's high bits after a
// multiply (structural_hash's low bits are weak for small ids).
struct InternTable {
  SpinLock mu;
  std::vector<const Node*> buckets = std::vector<const Node*>(size_t(1) << kInitialBits, nullptr);
  int bits = kInitialBits;
  size_t count = 0;

  static constexpr int kInitialBits = 10;

  size_t bucket(size_t h) const { return (h * 0x9e3779b97f4a7c15ULL) >> (64 - bits); }
  const Node* first(size_t h) const { return buckets[bucket(h)]; }
  // Grows the table if one more node would overfill it; called before the node is made, so
  // that a failing allocation leaves no node behind (its destructor takes this table's lock).
  void make_room() {
    if (count >= buckets.size()) grow();
  }
  void insert(const Node* n) {
    const Node*& b = buckets[bucket(n->hash)];
    n->intern_next = b;
    b = n;
    ++count;
  }
  void erase(const Node* n) {
    const Node** p = &buckets[bucket(n->hash)];
    while (*p && *p != n) p = &(*p)->intern_next;
    if (!*p) return;
    *p = n->intern_next;
    --count;
  }
  void grow() {
    std::vector<const Node*> old(size_t(1) << (bits + 1), nullptr);
    old.swap(buckets);
    ++bits;
    for (const Node* head : old) {
      while (head) {
        const Node* next = head->intern_next;
        const Node*& b = buckets[bucket(head->hash)];
        head->intern_next = b;
        b = head;
        head = next;
      }
    }
  }
};
InternTable& table() {
  static InternTable* t = new InternTable;  // never destroyed: nodes may outlive statics
  return *t;
}

// The next node id; read and advanced only with the intern table's lock held (a locked
// increment of its own was a tenth of make_node's time).
uint64_t g_next_id = 1;

// is_storage_or_complex (dtype_support.hpp) without its two out-of-line calls: make_node asks
// it of every node and each of its inputs.
static_assert(static_cast<int>(DType::F16) == 7 && static_cast<int>(DType::BF16) == 8 &&
              static_cast<int>(DType::C64) == 9 && static_cast<int>(DType::C128) == 10 && kNumDTypes == 11);
inline bool storage_or_complex(DType t) { return static_cast<int>(t) >= static_cast<int>(DType::F16); }

inline void mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

size_t structural_hash(Op op, const std::vector<NodeRef>& inputs, const Attrs& attrs, const Shape& shape,
                       DType dtype) {
  size_t h = std::hash<int>()(static_cast<int>(op));
  for (const NodeRef& in : inputs) mix(h, in->id);
  for (int64_t v : attrs.ints) mix(h, static_cast<size_t>(v));
  // By the bits, as same_reals compares them (std::hash<double> is a call into libstdc++'s
  // byte hash: a Full constant's value, three a CG iteration).
  for (double v : attrs.reals) mix(h, std::bit_cast<uint64_t>(v));
  mix(h, static_cast<size_t>(attrs.dtype));
  for (int64_t v : shape) mix(h, static_cast<size_t>(v));
  mix(h, static_cast<size_t>(dtype) + 17);
  return h;
}

bool same_reals(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {  // bitwise: NaN equals NaN, -0 differs from 0
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) return false;
  }
  return true;
}

bool same_structure(const Node& n, Op op, const std::vector<NodeRef>& inputs, const Attrs& attrs,
                    const Shape& shape, DType dtype) {
  if (n.op != op || n.dtype != dtype || n.shape != shape || n.inputs.size() != inputs.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (n.inputs[i].get() != inputs[i].get()) return false;
  return n.attrs.ints == attrs.ints && n.attrs.dtype == attrs.dtype && same_reals(n.attrs.reals, attrs.reals);
}

// The release rule. A node is "waiting" when it has no value and need > 0: its computation
// will read its inputs, so each of its input edges counts in that input's need. A change of
// need that flips a node between waiting and not waiting moves its inputs' need by the same
// delta, and so on down: a work list, not recursion (chains are 10^5 deep). A node is
// destroyed only when nothing refers to it, so never while waiting: ~Node has nothing to undo.
SpinLock g_need_mu;

// need, holders and held_once are written only here, with g_need_mu held, so an update is a
// plain load and store: a locked read-modify-write (or a sequentially consistent store, an
// xchg on x86) costs ~20 cycles and drains the store buffer, and a CG iteration made ~150 of
// them in this file (HeldNode::reset's time was mostly the instructions after its four).
// The fields stay atomic for the readers outside the lock (relaxed loads).
template <class T> T add_locked(std::atomic<T>& a, T delta) {
  const T before = a.load(std::memory_order_relaxed);
  a.store(before + delta, std::memory_order_relaxed);
  return before;
}

bool waiting(const Node& n) { return !n.value && !n.stored && n.need.load() > 0; }

// Past here need is 0: the value goes, unless it was never the user's (an engine temporary
// read right after its observation) or cannot be recomputed (data: a Source leaf).
void drop_if_unneeded(const Node& n) {
  if (n.need.load() > 0 || !n.held_once.load()) return;
  if (n.inputs.empty() && op_kind(n.op) != OpKind::Generate) return;  // not recomputable
  n.value.reset();
  n.stored.reset();  // its shards are freed at the next observation (release_unreferenced)
}

// Called with g_need_mu held (so one work list serves every call): applies delta to the
// need of each node in `work` and of every node a flip reaches. (A CG iteration passes here
// for every Tensor made, computed and collected: one read-modify-write and one value check a node.)
void change_need(std::vector<const Node*>& work, int delta) {
  struct Clear {  // a failed check must not leave stale entries for the next call
    std::vector<const Node*>& w;
    ~Clear() { w.clear(); }
  } clear{work};
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    const int32_t before = add_locked(n->need, delta);
    const int32_t after = before + delta;
    internal_check(after >= 0);
    // waiting() before and after: no value and need > 0 (the value does not change here).
    const bool computed = n->value || n->stored;
    if (!computed && (before > 0) != (after > 0))
      for (const NodeRef& in : n->inputs) work.push_back(in.get());
    if (after == 0 && computed) drop_if_unneeded(*n);
  }
}

std::vector<const Node*>& work_list() {
  static std::vector<const Node*> w;
  return w;
}

void change_need_of(const Node& n, int delta) {
  work_list().push_back(&n);
  change_need(work_list(), delta);
}

void change_need_of_inputs(const Node& n, int delta) {
  for (const NodeRef& in : n.inputs) work_list().push_back(in.get());
  change_need(work_list(), delta);
}

}  // namespace

void set_value(const Node& n, std::shared_ptr<const Value> v) {
  std::lock_guard<SpinLock> lock(g_need_mu);
  const bool was = waiting(n);
  n.value = std::move(v);
  if (waiting(n) != was) change_need_of_inputs(n, was ? -1 : +1);
}

void set_stored(const Node& n, NodeRef leaf) {
  std::lock_guard<SpinLock> lock(g_need_mu);
  const bool was = waiting(n);
  n.stored = std::move(leaf);
  if (waiting(n) != was) change_need_of_inputs(n, was ? -1 : +1);
}

HeldNode& HeldNode::reset(NodeRef n) {
  if (n == node_) return *this;
  std::lock_guard<SpinLock> lock(g_need_mu);
  if (n) {
    if (!n->held_once.load(std::memory_order_relaxed)) n->held_once.store(true, std::memory_order_relaxed);
    add_locked(n->holders, 1);
    change_need_of(*n, +1);
  }
  if (node_) {
    add_locked(node_->holders, -1);
    change_need_of(*node_, -1);
  }
  node_ = std::move(n);
  return *this;
}

Node::~Node() {
  {
    InternTable& t = table();
    std::lock_guard<SpinLock> lock(t.mu);
    t.erase(this);
  }
  // Dropping a long chain (a Lua loop of 10^5 updates) would recurse once per node and
  // overflow the stack: past a depth, inputs are parked and released iteratively.
  thread_local int depth = 0;
  thread_local std::vector<NodeRef> parked;
  if (depth > 256) {
    for (NodeRef& in : inputs) parked.push_back(std::move(in));
    return;
  }
  ++depth;
  inputs.clear();
  --depth;
  if (depth == 0) {
    while (!parked.empty()) {
      NodeRef n = std::move(parked.back());
      parked.pop_back();
      ++depth;
      n.reset();
      --depth;
    }
  }
}

NodeRef make_node(Op op, std::vector<NodeRef> inputs, Attrs attrs, Shape shape, DType dtype) {
  internal_check(op != Op::Source);
  const OpDef& def = op_def(op);
  internal_check(def.arity < 0 || static_cast<size_t>(def.arity) == inputs.size());
  for (const NodeRef& in : inputs) internal_check(in != nullptr);
  user_check(shape.size() <= static_cast<size_t>(kMaxDims), "the result would have ", shape.size(),
             " dims; a tensor has at most ", kMaxDims);
  bool exotic = storage_or_complex(dtype);
  for (const NodeRef& in : inputs) exotic = exotic || storage_or_complex(in->dtype);
  if (exotic) {  // f16, bf16, c64 or c128: not every kernel takes them
    std::vector<DType> ins;
    for (const NodeRef& in : inputs) ins.push_back(in->dtype);
    check_op_dtypes(op, ins, dtype);
  }

  const size_t h = structural_hash(op, inputs, attrs, shape, dtype);
  InternTable& t = table();
  std::lock_guard<SpinLock> lock(t.mu);
  for (const Node* c = t.first(h); c; c = c->intern_next) {
    if (c->hash != h || !same_structure(*c, op, inputs, attrs, shape, dtype)) continue;
    // shared_from_this takes the reference in one atomic step (weak_from_this().lock() copies
    // the weak reference first: three). It throws only for a node whose last reference is gone
    // and whose destructor waits for this lock to unlink it: not a match any more.
    try {
      return c->shared_from_this();
    } catch (const std::bad_weak_ptr&) {
    }
  }
  t.make_room();
  // Default-initialized: every field without an initializer is assigned below, and
  // make_shared<Node>() zero-filled the whole node first (rep stos of ~200 bytes, 16 nodes a
  // CG iteration).
  auto n = std::make_shared_for_overwrite<Node>();
  n->op = op;
  n->attrs = std::move(attrs);
  n->inputs = std::move(inputs);
  n->shape = std::move(shape);
  n->dtype = dtype;
  n->id = g_next_id++;  // under t.mu
  n->hash = h;
  t.insert(n.get());
  return n;
}

NodeRef make_source(std::shared_ptr<const Value> value, Shape shape, DType dtype,
                    std::function<void(uint64_t)> on_destroy) {
  user_check(shape.size() <= static_cast<size_t>(kMaxDims), "a tensor of ", shape.size(),
             " dims; a tensor has at most ", kMaxDims);
  std::shared_ptr<Node> n;
  if (on_destroy) {
    n = std::shared_ptr<Node>(new Node, [done = std::move(on_destroy)](Node* p) {
      const uint64_t id = p->id;
      delete p;
      done(id);
    });
  } else {
    n = std::make_shared_for_overwrite<Node>();  // (as in make_node)
  }
  n->op = Op::Source;
  n->id = 0;
  n->hash = 0;  // set under the lock below; ~Node reads it if the encoding throws first
  n->shape = std::move(shape);
  n->dtype = dtype;
  n->value = std::move(value);
  InternTable& t = table();
  std::lock_guard<SpinLock> lock(t.mu);
  t.make_room();  // may throw: n is not in the table yet, and dies after the lock is released
  n->id = g_next_id++;
  n->attrs = SourceAttrs{n->id}.encode();
  n->hash = structural_hash(Op::Source, {}, n->attrs, n->shape, dtype);
  t.insert(n.get());
  return n;
}

size_t live_node_count() {
  InternTable& t = table();
  std::lock_guard<SpinLock> lock(t.mu);
  return t.count;
}

}  // namespace tapestry
