#include "engine/exec/evaluator.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <new>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "engine/exec/block.hpp"
#include "engine/exec/progress.hpp"
#include "engine/exec/stats.hpp"
#include "engine/exec/trace.hpp"
#include "engine/poly/signature.hpp"
#include "engine/ir/error.hpp"
#include "engine/ir/value.hpp"
#include "engine/plan/fusion_groups.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"

namespace tapestry {

namespace {

std::atomic<bool> g_cancel{false};

double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

bool float_x(const Node* n) { return n->dtype == DType::F32 || n->dtype == DType::F64; }

// A variance as build::var makes it: s = sum(x) over trailing dims, m = s / c broadcast back
// (reshape, expand), then sum(square(x - m)) over the same dims, the square's group absorbed
// by that sum. Returns s -> the second sum: both come from one pass over x (cpu::run_moments).
std::unordered_map<const Node*, const Node*> find_moments(const plan::FusionGroups& g) {
  std::unordered_map<const Node*, const Node*> out;
  for (const auto& [s2, sq] : g.reduce_input) {
    if (s2->op != Op::Sum || sq->op != Op::Square || s2->value) continue;
    const Node* sub = sq->inputs[0].get();
    if (sub->op != Op::Sub || !g.inlined.count(sub)) continue;
    const Node* x = sub->inputs[0].get();
    const Node* e = sub->inputs[1].get();
    if (!float_x(x) || s2->dtype != x->dtype || e->op != Op::Expand || e->value) continue;
    // m = expand(sum(x) / c with the reduced dims put back as 1s); the reshape comes before
    // the division (mean with keepdim) or after it.
    const Node* a = e->inputs[0].get();
    const Node* b = a->inputs.empty() ? nullptr : a->inputs[0].get();
    if (!b || a->value || b->value) continue;
    const Node* div = a->op == Op::Div ? a : b;
    const Node* reshape = a->op == Op::Div ? b : a;
    if (div->op != Op::Div || reshape->op != Op::Reshape || div->inputs[1]->op != Op::Full) continue;
    const Node* s1 = reshape == b ? reshape->inputs[0].get() : div->inputs[0].get();
    if (s1->op != Op::Sum || s1->value || s1->inputs[0].get() != x || s1->dtype != x->dtype ||
        s1->attrs.ints != s2->attrs.ints || g.reduce_input.count(s1) || out.count(s1))
      continue;
    // The reduced dims are a trailing run, and m is one value per kept index: the reshape only
    // puts back the reduced dims as 1s, the expand widens exactly those.
    const int rank = static_cast<int>(x->shape.size());
    const std::vector<int64_t>& dims = s1->attrs.ints;
    bool trailing = !dims.empty();
    for (size_t i = 0; i < dims.size(); ++i)
      trailing = trailing && dims[i] == rank - static_cast<int>(dims.size()) + static_cast<int>(i);
    Shape keep = s1->shape;
    keep.resize(static_cast<size_t>(rank), 1);
    if (!trailing || reshape->shape != keep || e->shape != x->shape) continue;
    out[s1] = s2;
  }
  return out;
}

// One evaluation: the ordered subgraph, which maps fold into their consumer,
// and the values computed so far (freed after their last use).
class Evaluation {
 public:
  explicit Evaluation(const std::vector<NodeRef>& roots) : roots_(roots) {}

  void run() {
    const double t0 = now();
    decide_fusion();
    stats().time_schedule += now() - t0;
    const double t1 = now();
    int64_t kernels = 0;
    for (const Node* n : topo_) kernels += !(n->value || inlined_.count(n) || banded_.count(n));
    Progress progress(kernels);
    const bool tracing = trace::enabled();
    for (const Node* n : topo_) {
      if (n->value || inlined_.count(n) || banded_.count(n)) continue;  // leaves, fused nodes
      if (g_cancel.load(std::memory_order_relaxed)) throw Cancelled();
      const double k0 = tracing ? trace::now_us() : 0;
      values_[n] = compute(*n);
      if (tracing) trace_kernel(*n, k0);
      ++stats().nodes_evaluated;
      release_inputs(*n);
      progress.advance(1);
    }
    stats().time_run += now() - t1;
    if (tracing)
      trace::record({"phase", "evaluate", 0, trace::kPhases, t0 * 1e6, (now() - t0) * 1e6,
                     cat_str("\"kernels\":", kernels)});
    // Publish only after everything succeeded: a failure leaves no root changed.
    for (const NodeRef& r : roots_) {
      if (r->value) continue;
      auto it = values_.find(r.get());
      internal_check(it != values_.end());
      set_value(*r, contiguous(it->second));
    }
  }

 private:
  // One "kernel" event on rank 0 (a fused map names its root op and how many it absorbed).
  void trace_kernel(const Node& n, double t0_us) {
    const double dur = trace::now_us() - t0_us;
    int fused = 0;
    for (const NodeRef& in : n.inputs) fused += inlined_.count(in.get()) ? 1 : 0;
    trace::record({"kernel", std::string(op_def(n.op).name), 0, trace::kCompute, t0_us, dur,
                   cat_str("\"shape\":", trace::json_string(shape_str(n.shape)), ",\"bytes\":",
                           numel(n.shape) * static_cast<int64_t>(dtype_size(n.dtype)),
                           fused ? ",\"fused_inputs\":" + std::to_string(fused) : std::string())});
  }

  // The fusion rules are plan::group_fusion's (shared with plan::fuse). A map absorbed by a
  // reduction counts as inlined here: run_map_reduce computes it chunk by chunk.
  void decide_fusion() {
    plan::FusionGroups g = plan::group_fusion(roots_);
    moments_ = find_moments(g);
    topo_ = std::move(g.topo);
    root_set_ = std::move(g.roots);
    uses_ = std::move(g.uses);
    inlined_ = std::move(g.inlined);
    for (const auto& [reduce, map] : g.reduce_input) inlined_.insert(map);
    stats().fused_ops += static_cast<uint64_t>(g.fused_maps);
    for (const Node* n : topo_) {
      if (n->value || inlined_.count(n) || op_kind(n->op) != OpKind::Map) continue;
      visited_.clear();
      find_banded(*n, n);
    }
  }

  // A stencil (Correlate) read only by the map group of `root`, of root's shape: computed band
  // by band of rows inside that map (run_banded), so a step like u + c * stencil(u) reads u
  // and writes its result once, with the stencil's output living in a cache-sized band.
  void find_banded(const Node& root, const Node* m) {
    for (const NodeRef& ref : m->inputs) {
      const Node* in = ref.get();
      if (inlined_.count(in)) {
        if (visited_.insert(in).second) find_banded(root, in);
        continue;
      }
      auto u = uses_.find(in);
      if (in->op == Op::Correlate && !in->value && !root_set_.count(in) && u != uses_.end() &&
          u->second == 1 && in->shape == root.shape && !in->shape.empty() &&
          numel(in->shape) >= kBandMinElems && in->shape[0] > 1)
        banded_.insert(in);
    }
  }

  View input_view(const Node* n) {
    if (n->value) return n->value->view();
    auto it = values_.find(n);
    internal_check(it != values_.end());
    return it->second->view();
  }

  // After `n` (and the group fused into it) ran: one use less for every input edge
  // of every group member; a value nobody needs any more is freed.
  void release_inputs(const Node& n) {
    std::vector<const Node*> todo{&n};
    std::unordered_set<const Node*> members{&n};
    while (!todo.empty()) {
      const Node* m = todo.back();
      todo.pop_back();
      for (const NodeRef& in : m->inputs) {
        if (inlined_.count(in.get()) || banded_.count(in.get())) {
          if (members.insert(in.get()).second) todo.push_back(in.get());
        } else if (--uses_[in.get()] == 0 && !root_set_.count(in.get())) {
          values_.erase(in.get());
        }
      }
    }
  }

  std::shared_ptr<Value> alloc(DType t, const Shape& s) {
    const size_t bytes = static_cast<size_t>(numel(s)) * dtype_size(t);
    try {
      auto v = Value::alloc(t, s);
      stats().bytes_allocated += bytes;
      return v;
    } catch (const std::bad_alloc&) {
      user_error("out of memory allocating ", bytes, " bytes for a ", dtype_name(t), " tensor of shape ",
                 shape_str(s));
    }
  }

  static std::shared_ptr<Value> wrap(View v) {
    auto val = std::make_shared<Value>();
    val->v = std::move(v);
    return val;
  }

  std::shared_ptr<Value> contiguous(const std::shared_ptr<Value>& v) {
    if (v->v.is_contiguous() && v->v.offset == 0 &&
        v->v.buf->bytes() == static_cast<size_t>(v->v.numel() * dtype_size(v->v.dtype)))
      return v;
    auto out = alloc(v->v.dtype, v->v.shape);
    cpu::copy_view(v->v, out->v);
    return out;
  }

  std::shared_ptr<Value> compute(const Node& n) {
    ++stats().kernels;
    switch (op_kind(n.op)) {
      case OpKind::Source:
        internal_fail(__FILE__, __LINE__, "source without a value");
      case OpKind::Generate: {
        auto out = alloc(n.dtype, n.shape);
        cpu::run_generate(n.op, n.attrs, n.shape, std::vector<int64_t>(n.shape.size(), 0), out->v);
        return out;
      }
      case OpKind::Map: {
        cpu::MapProgram p = build_program(n);
        auto out = alloc(n.dtype, n.shape);
        if (banded_leaves_.empty()) cpu::run_map(p, out->v);
        else run_banded(n, p, out->v);
        return out;
      }
      case OpKind::Reduce: {
        auto out = alloc(n.dtype, n.shape);
        if (moments_pass(n, out->v)) return out;
        std::vector<int> dims(n.attrs.ints.begin(), n.attrs.ints.end());
        const Node* in = n.inputs[0].get();
        if (inlined_.count(in)) run_map_reduce(n, *in, dims, out->v);
        else cpu::run_reduce(n.op, input_view(in), dims, out->v);
        return out;
      }
      case OpKind::ArgReduce: {
        auto out = alloc(n.dtype, n.shape);
        const int dim = n.attrs.ints.empty() ? -1 : static_cast<int>(n.attrs.ints[0]);
        cpu::run_argreduce(n.op, input_view(n.inputs[0].get()), dim, out->v);
        return out;
      }
      case OpKind::Matmul: {
        auto out = alloc(n.dtype, n.shape);
        cpu::run_matmul(input_view(n.inputs[0].get()), input_view(n.inputs[1].get()), out->v);
        return out;
      }
      case OpKind::View:
        --stats().kernels;  // views move no data unless a reshape needs a copy
        return view_of(n);
      case OpKind::Cat: {
        auto out = alloc(n.dtype, n.shape);
        const int dim = static_cast<int>(n.attrs.ints[0]);
        std::vector<int64_t> start(n.shape.size(), 0), step(n.shape.size(), 1);
        for (const NodeRef& in : n.inputs) {
          Shape count = n.shape;
          count[dim] = in->shape[dim];
          cpu::copy_view(input_view(in.get()), out->v.sliced(start, step, count));
          start[dim] += in->shape[dim];
        }
        return out;
      }
      case OpKind::Fused: {  // made by plan::fuse; one block over the whole index space
        const poly::Signature sig = poly::signature_of(n);
        std::vector<View> ins;
        for (const NodeRef& in : n.inputs) ins.push_back(input_view(in.get()));
        return run_block(n, sig, sig.space_box(), ins);
      }
      case OpKind::Window: {  // one block over the whole space, from the slices it reads
        const poly::Signature sig = poly::signature_of(n);
        const poly::Box all = sig.space_box();
        std::vector<View> ins;
        for (size_t i = 0; i < n.inputs.size(); ++i) {
          const poly::Box need = sig.input_slice(i, all);  // a strided conv may skip the last rows
          ins.push_back(input_view(n.inputs[i].get())
                            .sliced(need.lo, std::vector<int64_t>(need.rank(), 1), need.extents()));
        }
        return run_block(n, sig, all, ins);
      }
      case OpKind::Write: {
        auto out = alloc(n.dtype, n.shape);
        const View value = input_view(n.inputs[1].get());
        cpu::copy_view(input_view(n.inputs[0].get()), out->v);
        cpu::copy_view(value, out->v.sliced(n.attrs.ints, std::vector<int64_t>(n.shape.size(), 1),
                                            value.shape));
        return out;
      }
    }
    internal_fail(__FILE__, __LINE__, "unknown op kind");
  }

  // reduce(map(...)) in chunks along dim 0 of the map: each chunk is computed into a small
  // buffer that stays in cache and reduced at once. When dim 0 is reduced, chunk results are
  // partials merged in order (deterministic); otherwise they are rows of the output.
  void run_map_reduce(const Node& reduce, const Node& map, const std::vector<int>& dims,
                      const View& out) {
    cpu::MapProgram p = build_program(map);
    const Shape& shape = map.shape;
    const int64_t rows = shape.empty() ? 1 : shape[0];
    const int64_t row_elems = shape.empty() ? 1 : numel(shape) / rows;
    constexpr int64_t kChunkElems = 1 << 18;  // 1 MiB of f32: fits in L2 with the leaves' tiles
    const int64_t chunk_rows = std::max<int64_t>(1, kChunkElems / std::max<int64_t>(row_elems, 1));
    if (shape.empty() || chunk_rows >= rows) {  // small: one chunk
      auto tmp = alloc(map.dtype, shape);
      cpu::run_map(p, tmp->v);
      cpu::run_reduce(reduce.op, tmp->v, dims, out);
      return;
    }
    const bool dim0_reduced = !dims.empty() && dims[0] == 0;
    const poly::CombineKind combine = poly::signature_of(reduce).combine();
    Shape chunk_shape = shape;
    chunk_shape[0] = chunk_rows;
    auto tmp = alloc(map.dtype, chunk_shape);
    std::shared_ptr<Value> part = dim0_reduced ? alloc(reduce.dtype, reduce.shape) : nullptr;
    const std::vector<View> leaves = p.leaves;
    const int r = static_cast<int>(shape.size());
    for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
      if (g_cancel.load(std::memory_order_relaxed)) throw Cancelled();
      const int64_t n = std::min(chunk_rows, rows - r0);
      std::vector<int64_t> start(r, 0), step(r, 1);
      start[0] = r0;
      Shape count = shape;
      count[0] = n;
      for (size_t i = 0; i < leaves.size(); ++i) p.leaves[i] = leaves[i].sliced(start, step, count);
      const View chunk = tmp->v.sliced(std::vector<int64_t>(r, 0), step, count);
      cpu::run_map(p, chunk);
      if (!dim0_reduced) {  // output rows r0 .. r0+n-1
        std::vector<int64_t> ostart(out.rank(), 0), ostep(out.rank(), 1);
        Shape ocount = out.shape;
        ostart[0] = r0;
        ocount[0] = n;
        cpu::run_reduce(reduce.op, chunk, dims, out.sliced(ostart, ostep, ocount));
      } else if (r0 == 0) {
        cpu::run_reduce(reduce.op, chunk, dims, out);
      } else {
        cpu::run_reduce(reduce.op, chunk, dims, part->v);
        combine_partials(combine, out, part->v);
      }
    }
  }

  // A variance (find_moments): the sum s = sum(x) computes, in the same pass
  // over x, the moments that the later sum((x - m)^2) needs; that one then only applies
  // sum (x - m)^2 = m2 + count * (mean - m)^2 with the m the graph computed from s. False: run
  // the reduction as usual (x is not contiguous, or this is not such a pair).
  bool moments_pass(const Node& n, const View& out) {
    if (auto it = centred_.find(&n); it != centred_.end()) {
      const Centred c = std::move(it->second);
      centred_.erase(it);
      const View m = input_view(c.mean);  // x - m's m: broadcast over the reduced dims
      const int64_t rows = static_cast<int64_t>(c.rows.size());
      const int kept = static_cast<int>(n.shape.size());
      internal_check(out.is_contiguous() && out.numel() == rows && m.rank() >= kept);
      dispatch_float(n.dtype, [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* mp = m.ptr<T>();
        T* o = out.ptr<T>();
        for (int64_t r = 0; r < rows; ++r) {
          int64_t off = 0;
          for (int64_t q = r, d = kept - 1; d >= 0; --d) {
            off += (q % n.shape[d]) * m.strides[d];
            q /= n.shape[d];
          }
          const cpu::Moments& mo = c.rows[r];
          const double dm = (mo.shift - static_cast<double>(mp[off])) + mo.dmean;
          o[r] = static_cast<T>(mo.m2 + static_cast<double>(mo.count) * dm * dm);
        }
      });
      return true;
    }
    auto it = moments_.find(&n);
    if (it == moments_.end()) return false;
    const Node* centred = it->second;
    const View x = input_view(n.inputs[0].get());
    if (!x.is_contiguous()) return false;
    const int64_t rows = std::max<int64_t>(1, numel(n.shape));
    internal_check(out.is_contiguous() && out.numel() == rows);
    Centred c;
    c.rows.resize(static_cast<size_t>(rows));
    cpu::run_moments(x, rows, c.rows.data());
    dispatch_float(n.dtype, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      T* o = out.ptr<T>();
      for (int64_t r = 0; r < rows; ++r) o[r] = static_cast<T>(c.rows[r].sum);
    });
    // The centred sum's map is square(x - m): its second leaf is m (an expand).
    c.mean = centred->inputs[0]->inputs[0]->inputs[1].get();
    centred_[centred] = std::move(c);
    return true;
  }

  template <class F>
  static void dispatch_float(DType t, F&& f) {
    if (t == DType::F32) f(static_cast<float*>(nullptr));
    else if (t == DType::F64) f(static_cast<double*>(nullptr));
    else internal_fail(__FILE__, __LINE__, "moments of a non-float dtype");
  }

  // The map `root` whose program has banded stencils among its leaves (placeholders in p):
  // rows in bands of ~kBandElems; per band each stencil computes its rows of output into a
  // per-thread buffer (run_correlate with the band's origin, exactly the whole op's sums),
  // then the program runs over the band. Bands are shared out over the threads.
  void run_banded(const Node& root, cpu::MapProgram& p, const View& out) {
    struct Win {
      int leaf;
      const Node* node;
      View x, k;
      std::vector<int64_t> origin;  // the whole op's: -pad_before
    };
    std::vector<Win> wins;
    for (const auto& [leaf, w] : banded_leaves_) {
      Win win{leaf, w, input_view(w->inputs[0].get()), input_view(w->inputs[1].get()), {}};
      for (size_t d = 0; d < w->shape.size(); ++d) win.origin.push_back(-w->attrs.ints[d]);
      wins.push_back(std::move(win));
    }
    const Shape& shape = root.shape;
    const int r = static_cast<int>(shape.size());
    const int64_t rows = shape[0], row_elems = numel(shape) / rows;
    const int64_t band = std::clamp<int64_t>(kBandElems / std::max<int64_t>(row_elems, 1), 1, rows);
    const int64_t nbands = (rows + band - 1) / band;
    const bool stream = out.numel() * static_cast<int64_t>(dtype_size(out.dtype)) >= (int64_t(32) << 20);
    Shape band_shape = shape;
    band_shape[0] = band;
    std::vector<std::vector<std::shared_ptr<Value>>> scratch(static_cast<size_t>(cpu::pool_width()));
    cpu::parallel_for(nbands, 1, [&](int64_t lo, int64_t hi, int worker) {
      auto& bufs = scratch[static_cast<size_t>(worker)];
      if (bufs.empty())
        for (const Win& w : wins) bufs.push_back(alloc(w.node->dtype, band_shape));
      cpu::MapProgram pb = p;
      pb.stream_out = stream;
      std::vector<int64_t> start(r, 0), zero(r, 0), step(r, 1);
      for (int64_t b = lo; b < hi; ++b) {
        if (g_cancel.load(std::memory_order_relaxed)) throw Cancelled();
        start[0] = b * band;
        Shape count = shape;
        count[0] = std::min(band, rows - start[0]);
        for (size_t i = 0; i < p.leaves.size(); ++i)
          if (p.leaves[i].buf) pb.leaves[i] = p.leaves[i].sliced(start, step, count);
        for (size_t j = 0; j < wins.size(); ++j) {
          std::vector<int64_t> origin = wins[j].origin;
          origin[0] += start[0];
          const View piece = bufs[j]->v.sliced(zero, step, count);
          cpu::run_correlate(wins[j].x, wins[j].k, origin, piece);
          pb.leaves[static_cast<size_t>(wins[j].leaf)] = piece;
        }
        cpu::run_map(pb, out.sliced(start, step, count));
      }
    });
  }

  std::shared_ptr<Value> view_of(const Node& n) {
    const View in = input_view(n.inputs[0].get());
    switch (n.op) {
      case Op::Permute:
        return wrap(in.permuted(std::vector<int>(n.attrs.ints.begin(), n.attrs.ints.end())));
      case Op::Expand:
        return wrap(in.expanded(n.shape));
      case Op::Constrain:  // one rank: the layout is the whole tensor
        return wrap(in);
      case Op::Slice: {
        const size_t r = n.shape.size();
        std::vector<int64_t> start(n.attrs.ints.begin(), n.attrs.ints.begin() + r);
        std::vector<int64_t> step(n.attrs.ints.begin() + r, n.attrs.ints.end());
        return wrap(in.sliced(start, step, n.shape));
      }
      case Op::Reshape: {
        View out;
        if (in.try_reshape(n.shape, out)) return wrap(out);
        ++stats().kernels;
        auto copy = alloc(in.dtype, in.shape);
        cpu::copy_view(in, copy->v);
        internal_check(copy->v.try_reshape(n.shape, out));
        return wrap(out);
      }
      default:
        internal_fail(__FILE__, __LINE__, "not a view op");
    }
  }

  // The fused group of a map: the root plus the maps and constants inlined into it.
  bool in_group(const Node* n, bool is_root) const { return is_root || inlined_.count(n); }

  cpu::MapProgram build_program(const Node& root) {
    cpu::MapProgram p;
    std::unordered_map<const Node*, int> reg;
    visited_.clear();
    banded_leaves_.clear();
    collect_leaves(&root, true, p, reg);
    emit(&root, true, p, reg);
    return p;
  }

  // Leaves (values computed outside the group) take the first registers.
  void collect_leaves(const Node* n, bool is_root, cpu::MapProgram& p,
                      std::unordered_map<const Node*, int>& reg) {
    if (in_group(n, is_root)) {
      if (!visited_.insert(n).second) return;  // a DAG: x*x must not double the walk
      for (const NodeRef& in : n->inputs) collect_leaves(in.get(), false, p, reg);
      return;
    }
    if (!reg.emplace(n, static_cast<int>(p.leaves.size())).second) return;
    if (banded_.count(n)) {  // computed per band by run_banded: a placeholder here
      banded_leaves_.push_back({static_cast<int>(p.leaves.size()), n});
      p.leaves.emplace_back();
      return;
    }
    p.leaves.push_back(input_view(n));
  }

  // Instructions in dependency order; returns n's register.
  int emit(const Node* n, bool is_root, cpu::MapProgram& p, std::unordered_map<const Node*, int>& reg) {
    if (auto it = reg.find(n); it != reg.end()) return it->second;
    internal_check(in_group(n, is_root));
    cpu::MapInstr ins{n->op, n->dtype, n->dtype};
    if (n->op == Op::Full) {
      ins.real = n->attrs.reals.at(0);
      ins.integer = n->attrs.ints.at(0);
    } else {
      int* args[3] = {&ins.a, &ins.b, &ins.c};
      for (size_t i = 0; i < n->inputs.size(); ++i) *args[i] = emit(n->inputs[i].get(), false, p, reg);
      ins.in = n->inputs.back()->dtype;  // Where: the dtype of a and b; Cast: the source
    }
    p.instrs.push_back(ins);
    const int r = static_cast<int>(p.leaves.size() + p.instrs.size()) - 1;
    reg[n] = r;
    return r;
  }

  std::vector<NodeRef> roots_;
  std::unordered_set<const Node*> root_set_;
  std::vector<const Node*> topo_;
  std::unordered_map<const Node*, int> uses_;
  std::unordered_set<const Node*> inlined_;
  std::unordered_set<const Node*> visited_;  // group members seen by collect_leaves
  std::unordered_set<const Node*> banded_;   // stencils computed inside their map (run_banded)
  std::vector<std::pair<int, const Node*>> banded_leaves_;  // of the last build_program
  static constexpr int64_t kBandElems = int64_t(1) << 17;     // a band: 512 KiB of f32, in L2
  static constexpr int64_t kBandMinElems = int64_t(1) << 18;  // smaller stencils run whole
  std::unordered_map<const Node*, std::shared_ptr<Value>> values_;
  std::unordered_map<const Node*, const Node*> moments_;  // sum(x) -> sum((x - m)^2)
  struct Centred {
    std::vector<cpu::Moments> rows;  // per output element of the centred sum
    const Node* mean = nullptr;      // the broadcast m
  };
  std::unordered_map<const Node*, Centred> centred_;  // filled by the sum(x) pass
};

}  // namespace

void evaluate(const std::vector<NodeRef>& roots) {
  ++stats().observations;
  bool all_done = true;
  for (const NodeRef& r : roots) all_done = all_done && r->value;
  if (all_done) return;
  Evaluation(roots).run();
}

void request_cancel() { g_cancel.store(true); }
void clear_cancel() { g_cancel.store(false); }
bool cancel_requested() { return g_cancel.load(std::memory_order_relaxed); }

}  // namespace tapestry
