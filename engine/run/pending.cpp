#include "engine/run/pending.hpp"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/functors.hpp"

namespace tapestry {

// The release rule (node.cpp's, for records). A record "waits" when it has no value and is
// needed: held by a Lua Tensor or read by a waiting record. Each input edge of a waiting
// record counts in that input's waiters; a computed record that nothing holds or waits on
// drops its value (it keeps its inputs: tp.grad reads the history, and build_node
// recomputes through nodes if a value is wanted again).
struct PendingRules {
  struct Change {
    Pending* r;
    int holders, waiters;
  };

  static int depth(const Pending& r) { return r.depth_; }
  // An uncomputed map whose operands are computed: computed into scratch by its reader.
  static bool inline_operand(const Pending& r);
  // r's kernel on its operands' data (views of r's inputs' shapes), into o.
  static void run(const Pending& r, const View* const in[2], const View& o);
  static NodeRef build_one(const Pending& r);
  static bool waiting(const Pending& r) { return !r.value_ && (r.holders_ > 0 || r.waiters_ > 0); }

  static void apply(std::vector<Change>& work) {
    while (!work.empty()) {
      const Change c = work.back();
      work.pop_back();
      Pending& r = *c.r;
      const bool was = waiting(r);
      r.holders_ += c.holders;
      r.waiters_ += c.waiters;
      internal_check(r.holders_ >= 0 && r.waiters_ >= 0);
      const bool now = waiting(r);
      if (was != now)
        for (int i = 0; i < r.num_inputs_; ++i)
          if (Pending* in = r.in_[i].rec.get()) work.push_back({in, 0, now ? 1 : -1});
      if (r.value_ && r.holders_ == 0 && r.waiters_ == 0) r.value_.reset();
    }
  }

  static std::vector<Change>& work_list() {
    static thread_local std::vector<Change> w;
    return w;
  }

  // apply() of one change, the work list only when it flips r (a Tensor made or collected
  // flips nothing past itself but for a record not computed yet).
  static void change(Pending& r, int holders, int waiters) {
    const bool was = waiting(r);
    r.holders_ += holders;
    r.waiters_ += waiters;
    internal_check(r.holders_ >= 0 && r.waiters_ >= 0);
    if (r.value_ && r.holders_ == 0 && r.waiters_ == 0) r.value_.reset();
    const bool now = waiting(r);
    if (was == now) return;
    std::vector<Change>& w = work_list();
    for (int i = 0; i < r.num_inputs_; ++i)
      if (Pending* in = r.in_[i].rec.get()) w.push_back({in, 0, now ? 1 : -1});
    apply(w);
  }

  // r computed: it no longer waits on its inputs.
  static void set_value(Pending& r, std::shared_ptr<const Value> v) {
    const bool was = waiting(r);
    r.value_ = std::move(v);
    if (!was) return;
    std::vector<Change>& w = work_list();
    for (int i = 0; i < r.num_inputs_; ++i)
      if (Pending* in = r.in_[i].rec.get()) w.push_back({in, 0, -1});
    apply(w);
  }

  // The last reference went: free r and whatever only it kept, without recursion (a history
  // is a chain as long as the loop that made it).
  static void destroy(Pending* r) {
    std::vector<Pending*> work{r};
    while (!work.empty()) {
      Pending* p = work.back();
      work.pop_back();
      for (int i = 0; i < p->num_inputs_; ++i) {
        Pending* in = p->in_[i].rec.p_;
        p->in_[i].rec.p_ = nullptr;
        if (in && --in->refs_ == 0) work.push_back(in);
      }
      delete p;
    }
  }
};

PendingRef::PendingRef(Pending* p) : p_(p) {
  if (p_) ++p_->refs_;
}

void PendingRef::reset() {
  Pending* p = p_;
  p_ = nullptr;
  if (p && --p->refs_ == 0) PendingRules::destroy(p);
}

void HeldPending::hold(PendingRef r) {
  reset();
  ref_ = std::move(r);
  if (ref_) PendingRules::change(*ref_, 1, 0);
}

void HeldPending::reset() {
  if (!ref_) return;
  PendingRules::change(*ref_, -1, 0);
  ref_.reset();
}

namespace {

bool plain_float(DType t) { return t == DType::F32 || t == DType::F64; }

// What a record needs to know of a tensor operand; ok = false: not recordable.
struct Facts {
  bool ok = false;
  const Shape* shape = nullptr;
  DType dtype = DType::F32;
  int depth = 0;  // of uncomputed records below
};

Facts facts(const PendingArg& x) {
  Facts f;
  if (x.rec) {
    f.shape = &x.rec->shape();
    f.dtype = x.rec->dtype();
    f.depth = x.rec->value() ? 0 : PendingRules::depth(*x.rec);
    f.ok = true;
  } else if (x.node) {
    // A computed host value the kernels read as it is: not a stored (sharded) result, not a
    // packed (declared) tensor, dense and in a plain float dtype.
    const Node& n = **x.node;
    f.shape = &n.shape;
    f.dtype = n.dtype;
    f.ok = n.value && !n.stored && n.op != Op::Declare && plain_float(n.dtype) &&
           n.value->view().is_contiguous();
  }
  f.ok = f.ok && plain_float(f.dtype);
  return f;
}

template <class T, class F> void map_loop(F f, T* o, const T* a, const T* b, T ca, T cb, int64_t n) {
  if (!a)
    for (int64_t i = 0; i < n; ++i) o[i] = f(ca, b[i]);
  else if (!b)
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], cb);
  else
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
}

// One IEEE operation an element, as run_map's instruction computes it (a number is rounded to
// the dtype first, as build::full rounds a Full constant).
template <class T> void run_map_op(Op op, T* o, const T* a, const T* b, double number, int64_t n) {
  const T c = static_cast<T>(number);
  if constexpr (std::is_same_v<T, float>)
    if (op == Op::Mul)
      return cpu::multiply_f32(o, a, b, c, c, n);  // (a converging loop's products underflow)
  switch (op) {
    case Op::Add: return map_loop(fn::Add<T>{}, o, a, b, c, c, n);
    case Op::Sub: return map_loop(fn::Sub<T>{}, o, a, b, c, c, n);
    case Op::Mul: return map_loop(fn::Mul<T>{}, o, a, b, c, c, n);
    case Op::Div: return map_loop(fn::Div<T>{}, o, a, b, c, c, n);
    default: internal_check(false);
  }
}

}  // namespace

PendingRef record_binary(Op op, const PendingArg& a, const PendingArg& b) {
  if (op != Op::Add && op != Op::Sub && op != Op::Mul && op != Op::Div) return {};
  if (a.number && b.number) return {};
  const PendingArg& t0 = a.number ? b : a;
  const Facts f0 = facts(t0);
  if (!f0.ok) return {};
  Facts f1;
  if (!a.number && !b.number) {
    f1 = facts(b);
    if (!f1.ok || f1.dtype != f0.dtype || *f1.shape != *f0.shape) return {};
  }
  const int64_t n = numel(*f0.shape);
  if (n < 1 || n > kPendingMaxElems) return {};
  const int depth = 1 + std::max(f0.depth, f1.depth);
  if (depth > kPendingMaxDepth) return {};
  auto* r = new Pending;
  PendingRef ref(r);  // not waiting on anything until a Tensor holds it
  r->kind_ = Pending::Kind::Map;
  r->op_ = op;
  r->dtype_ = f0.dtype;
  r->shape_ = *f0.shape;
  r->numel_ = n;
  r->depth_ = depth;
  auto set_input = [&](int i, const PendingArg& x) {
    if (x.rec) r->in_[i].rec = PendingRef(x.rec);
    else r->in_[i].node = *x.node;
  };
  if (a.number || b.number) {
    const PendingArg& num = a.number ? a : b;
    r->number_side_ = a.number ? 0 : 1;
    r->number_integer_ = num.integer;
    r->number_ = num.real;
    r->number_int_ = num.int_value;
    set_input(0, t0);
    r->num_inputs_ = 1;
  } else {
    set_input(0, a);
    set_input(1, b);
    r->num_inputs_ = 2;
  }
  return ref;
}

PendingRef record_sum(const PendingArg& x) {
  if (x.number) return {};
  const Facts f = facts(x);
  if (!f.ok || f.shape->empty() || numel(*f.shape) < 1 || 1 + f.depth > kPendingMaxDepth) return {};
  auto* r = new Pending;
  PendingRef ref(r);  // not waiting on anything until a Tensor holds it
  r->kind_ = Pending::Kind::Sum;
  r->op_ = Op::Sum;
  r->numel_ = 1;
  r->dtype_ = f.dtype;
  r->depth_ = 1 + f.depth;
  if (x.rec) r->in_[0].rec = PendingRef(x.rec);
  else r->in_[0].node = *x.node;
  r->num_inputs_ = 1;
  return ref;
}

PendingRef record_matmul(const PendingArg& a, const PendingArg& b) {
  if (a.number || b.number) return {};
  const Facts fa = facts(a), fb = facts(b);
  if (!fa.ok || !fb.ok || fa.dtype != fb.dtype || fa.shape->size() != 2 || fb.shape->size() != 1) return {};
  const int64_t n = (*fa.shape)[0], k = (*fa.shape)[1];
  if (n < 1 || k < 1 || (*fb.shape)[0] != k || n > kPendingMaxElems) return {};
  // A product of an uncomputed product is a chain the evaluator may reassociate.
  for (const PendingArg* x : {&a, &b})
    if (x->rec && x->rec->kind() == Pending::Kind::Matmul && !x->rec->value()) return {};
  const int depth = 1 + std::max(fa.depth, fb.depth);
  if (depth > kPendingMaxDepth) return {};
  auto* r = new Pending;
  PendingRef ref(r);  // not waiting on anything until a Tensor holds it
  r->kind_ = Pending::Kind::Matmul;
  r->op_ = Op::Matmul;
  r->dtype_ = fa.dtype;
  r->shape_ = Shape{n};
  r->numel_ = n;
  r->depth_ = depth;
  for (int i = 0; i < 2; ++i) {
    const PendingArg& x = i == 0 ? a : b;
    if (x.rec) r->in_[i].rec = PendingRef(x.rec);
    else r->in_[i].node = *x.node;
  }
  r->num_inputs_ = 2;
  return ref;
}

namespace {

// v's strides row-major for its shape, in place (a new vector each call was a tenth of a
// record's set-up).
void set_contiguous_strides(View& v) {
  v.strides.resize(v.shape.size());
  int64_t acc = 1;
  for (size_t i = v.shape.size(); i-- > 0;) {
    v.strides[i] = acc;
    acc *= v.shape[i];
  }
}

// Two views (a record's operands) on scratch memory of kPendingMaxElems doubles each. An
// uncomputed map of computed operands read by the record being computed is computed there and
// not kept, as a fused kernel keeps no intermediate (a later observation of it computes it
// again): a CG iteration's alpha * p and p * Ap. Never freed (a thread's Lua state may outlive
// the statics a Buffer's destructor uses).
View& scratch(int slot, DType t, const Shape& shape) {
  static thread_local View* views = nullptr;
  if (!views) {
    views = new View[2];
    for (int i = 0; i < 2; ++i) views[i].buf = std::make_shared<Buffer>(kPendingMaxElems * sizeof(double));
  }
  View& v = views[slot];
  v.dtype = t;
  v.shape = shape;
  set_contiguous_strides(v);
  return v;
}

}  // namespace

bool PendingRules::inline_operand(const Pending& r) {
  if (r.value_ || r.kind_ != Pending::Kind::Map) return false;
  for (int i = 0; i < r.num_inputs_; ++i) {
    const Pending::Input& in = r.in_[i];
    if (in.rec ? !in.rec->value_ : !in.node->value) return false;
  }
  return true;
}

void PendingRules::run(const Pending& r, const View* const in[2], const View& o) {
  switch (r.kind_) {
    case Pending::Kind::Map: {
      const int64_t n = r.numel_;
      const char* x = in[0]->byte_ptr();
      const char* y = r.num_inputs_ == 2 ? in[1]->byte_ptr() : nullptr;
      const char* lhs = r.number_side_ == 0 ? nullptr : x;
      const char* rhs = r.number_side_ == 0 ? x : y;
      if (r.dtype_ == DType::F32)
        run_map_op(r.op_, o.ptr<float>(), reinterpret_cast<const float*>(lhs),
                   reinterpret_cast<const float*>(rhs), r.number_, n);
      else
        run_map_op(r.op_, o.ptr<double>(), reinterpret_cast<const double*>(lhs),
                   reinterpret_cast<const double*>(rhs), r.number_, n);
      return;
    }
    case Pending::Kind::Sum: {
      static const std::vector<int> kDims[] = {{0}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}};
      const View& x = *in[0];
      std::vector<int> dims;
      if (x.shape.size() > 4) {
        dims.resize(x.shape.size());
        for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int>(d);
      }
      cpu::run_reduce(Op::Sum, x, x.shape.size() > 4 ? dims : kDims[x.shape.size() - 1], o);
      return;
    }
    case Pending::Kind::Matmul: {
      // As the evaluator runs the builders' Reshape(Matmul(a, Reshape(b, {k, 1})), {n}).
      // (Views kept per thread, rewritten in place: no shape and stride vectors a call.)
      const View& a = *in[0];
      static thread_local View col, out_col;
      auto column = [](View& c, const View& of, int64_t rows) {
        internal_check(of.is_contiguous() && of.numel() == rows);
        c.buf = of.buf;
        c.dtype = of.dtype;
        c.offset = of.offset;
        c.shape.assign({rows, 1});
        c.strides.assign({1, 1});
      };
      column(col, *in[1], a.shape[1]);
      column(out_col, o, a.shape[0]);
      cpu::run_matmul(a, col, out_col);
      col.buf.reset();  // (not keeping the buffers alive)
      out_col.buf.reset();
      return;
    }
  }
}

bool compute(Pending& r, Stats& st) {
  if (r.value_) return true;
  // Operands that are kept first (their computation may use the scratch views), then the
  // inline ones into the scratch.
  for (int i = 0; i < r.num_inputs_; ++i) {
    const Pending::Input& in = r.in_[i];
    if (in.node ? !in.node->value : !PendingRules::inline_operand(*in.rec) && !compute(*in.rec, st))
      return false;
  }
  const View* in[2] = {nullptr, nullptr};
  for (int i = 0; i < r.num_inputs_; ++i) {
    const Pending::Input& in_i = r.in_[i];
    if (in_i.node) {
      in[i] = &in_i.node->value->view();
    } else if (in_i.rec->value_) {
      in[i] = &in_i.rec->value_->view();
    } else {
      const Pending& m = *in_i.rec;
      const View& v = scratch(i, m.dtype_, m.shape_);
      const View* m_in[2] = {nullptr, nullptr};
      for (int j = 0; j < m.num_inputs_; ++j)
        m_in[j] = m.in_[j].node ? &m.in_[j].node->value->view() : &m.in_[j].rec->value_->view();
      PendingRules::run(m, m_in, v);
      st.nodes_evaluated += 1;
      st.fused_ops += 1;
      in[i] = &v;
    }
  }
  auto out = Value::alloc(r.dtype_, r.shape_);
  PendingRules::run(r, in, out->view());
  st.nodes_evaluated += 1;
  st.kernels += 1;
  st.bytes_allocated += static_cast<uint64_t>(r.numel_ * dtype_size(r.dtype_));
  PendingRules::set_value(r, std::move(out));
  return true;
}

namespace {

const NodeRef& node_of(const Pending::Input& in) { return in.rec ? in.rec->node() : in.node; }

}  // namespace

NodeRef PendingRules::build_one(const Pending& r) {
  switch (r.kind_) {
    case Pending::Kind::Map: {
      if (r.num_inputs_ == 2) return build::binary(r.op_, node_of(r.in_[0]), node_of(r.in_[1]));
      const build::Operand num = r.number_integer_ ? build::Operand::integer_number(r.number_int_)
                                                   : build::Operand::number(r.number_);
      return r.number_side_ == 0 ? build::binary(r.op_, num, node_of(r.in_[0]))
                                 : build::binary(r.op_, node_of(r.in_[0]), num);
    }
    case Pending::Kind::Sum: return build::reduce(Op::Sum, node_of(r.in_[0]), {}, false);
    case Pending::Kind::Matmul: return build::matmul(node_of(r.in_[0]), node_of(r.in_[1]));
  }
  internal_check(false);
  return nullptr;
}

NodeRef build_node(Pending& r) {
  if (r.node_) return r.node_;
  std::vector<Pending*> stack{&r};
  while (!stack.empty()) {
    Pending* p = stack.back();
    if (p->node_) {
      stack.pop_back();
      continue;
    }
    bool ready = true;
    for (int i = 0; i < p->num_inputs_; ++i) {
      Pending* in = p->in_[i].rec.get();
      if (in && !in->node_) {
        stack.push_back(in);
        ready = false;
      }
    }
    if (!ready) continue;
    stack.pop_back();
    p->node_ = PendingRules::build_one(*p);
    if (p->value_ && !p->node_->value && !p->node_->stored) set_value(*p->node_, p->value_);
  }
  return r.node_;
}

}  // namespace tapestry
