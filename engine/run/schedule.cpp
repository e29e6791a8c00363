#include "engine/run/schedule.hpp"

#include <cstring>

namespace tapestry {

namespace {

// Most recent last. thread_local: an evaluation runs on one thread, and two threads evaluating
// graphs of one structure each keep their own.
std::vector<std::unique_ptr<Schedule>>& cache() {
  thread_local std::vector<std::unique_ptr<Schedule>> c = [] {
    std::vector<std::unique_ptr<Schedule>> v;
    v.reserve(kScheduleCacheSize);  // ~ScheduleLease's push_back never allocates (it may run in an unwind)
    return v;
  }();
  return c;
}

bool same_shape(const Shape& a, const Shape& b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// Attributes as interned (bitwise reals: -0 is not 0); a Full constant's number is not compared.
bool same_attrs(const Node& n, const Attrs& a) {
  if (n.attrs.dtype != a.dtype) return false;
  if (n.op == Op::Full) return true;
  if (n.attrs.ints != a.ints || n.attrs.reals.size() != a.reals.size()) return false;
  return a.reals.empty() ||
         std::memcmp(n.attrs.reals.data(), a.reals.data(), a.reals.size() * sizeof(double)) == 0;
}

bool fits(const Node& n, const SlotKey& k) {
  if (n.op != k.op || n.dtype != k.dtype || (n.value != nullptr) != k.valued || !same_shape(n.shape, k.shape))
    return false;
  return k.valued || (static_cast<int>(n.inputs.size()) == k.inputs && same_attrs(n, k.attrs));
}

inline void mix(uint64_t& h, uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; }

uint64_t describe(const Node& n) {
  return static_cast<uint64_t>(n.op) | uint64_t(n.value != nullptr) << 16 | n.inputs.size() << 20;
}

}  // namespace

uint64_t head_of(const std::vector<NodeRef>& roots) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const NodeRef& r : roots) {
    mix(h, describe(*r) | static_cast<uint64_t>(r->dtype) << 32 | r->shape.size() << 40);
    if (r->value) continue;
    for (const NodeRef& in : r->inputs) {
      mix(h, describe(*in));
      if (in->value) continue;
      for (const NodeRef& in2 : in->inputs) mix(h, describe(*in2));
    }
  }
  return h;
}

std::unique_ptr<Schedule> make_schedule(const plan::FusionGroups& g, const std::vector<NodeRef>& roots) {
  if (g.size() > kMaxScheduledNodes) return nullptr;
  auto s = std::make_unique<Schedule>();
  s->head = head_of(roots);
  s->keys.resize(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = *g.nodes[i];
    SlotKey& k = s->keys[i];
    k.op = n.op;
    k.dtype = n.dtype;
    k.valued = n.value != nullptr;
    k.inputs = static_cast<int>(n.inputs.size());
    k.shape = n.shape;
    if (k.valued) continue;
    k.attrs.dtype = n.attrs.dtype;
    if (n.op == Op::Full) continue;
    k.attrs = n.attrs;
  }
  s->first_edge = g.first_edge;
  s->edges = g.edges;
  s->order = g.order;
  for (const NodeRef& r : roots) s->root_slots.push_back(g.index_of(r.get()));
  return s;
}

bool bind_schedule(const Schedule& s, const std::vector<NodeRef>& roots, std::vector<const Node*>& nodes) {
  if (roots.size() != s.root_slots.size()) return false;
  const size_t n = s.keys.size();
  nodes.assign(n, nullptr);
  for (size_t q = 0; q < roots.size(); ++q) {
    const Node* r = roots[q].get();
    const Node*& at = nodes[static_cast<size_t>(s.root_slots[q])];
    if (at) {
      if (at != r) return false;
    } else {
      if (!fits(*r, s.keys[static_cast<size_t>(s.root_slots[q])])) return false;
      at = r;
    }
  }
  // Discovery order: a slot is reached from an earlier one (or is a root), so it is bound
  // before its own inputs are checked.
  for (size_t i = 0; i < n; ++i) {
    const Node* x = nodes[i];
    if (!x) return false;
    if (s.keys[i].valued) continue;
    const int* e = s.edges.data() + s.first_edge[i];
    for (size_t k = 0; k < x->inputs.size(); ++k) {
      const Node* in = x->inputs[k].get();
      const Node*& at = nodes[static_cast<size_t>(e[k])];
      if (at) {
        if (at != in) return false;
      } else {
        if (!fits(*in, s.keys[static_cast<size_t>(e[k])])) return false;
        at = in;
      }
    }
  }
  return true;
}

ScheduleLease::ScheduleLease(const std::vector<NodeRef>& roots, std::vector<const Node*>& nodes) {
  auto& c = cache();
  if (c.empty()) return;
  const uint64_t head = head_of(roots);
  for (size_t i = c.size(); i-- > 0;) {
    if (c[i]->head != head || !bind_schedule(*c[i], roots, nodes)) continue;
    s_ = std::move(c[i]);
    c.erase(c.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

ScheduleLease::~ScheduleLease() {
  if (!s_) return;
  auto& c = cache();
  if (c.size() >= kScheduleCacheSize) c.erase(c.begin());
  c.push_back(std::move(s_));
}

size_t cached_schedules() { return cache().size(); }

}  // namespace tapestry
