// run_map: the fused elementwise program interpreter.
//
// The output's flat index space is cut into tiles of kTile elements. For a tile, each
// leaf becomes a pointer (contiguous leaves are read in place; broadcast scalars and
// constants are splatted once per thread; other leaves are gathered into a scratch
// tile), then every instruction runs one tight loop over the tile, chosen once per
// run by (op, dtype) — no per-element dispatch; the loops are vector_kernels.cpp's, built for
// AVX2 and AVX-512 (the set in use picks them); a program with tanh or another costly op over
// large leaves runs them over slices of a tile, with a prefetch (run_sliced). Loops always
// cover a multiple of kPad elements (the last tile is padded), so every element takes the
// same vector path and a result never depends on where a shard boundary fell.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/strided.hpp"
#include "kernels/cpu/vector_kernels.hpp"
#include "kernels/functors.hpp"

namespace tapestry::cpu {
namespace {

// 4 KiB per f64 register: a program's tiles stay in L1. Short tiles also keep every leaf's
// stream moving: a step reads one or two leaves for a whole tile while the others wait, and
// with 2,048 elements a*b+c streamed at 23 GB/s on one thread against 34 GB/s at 512
// (tanh(a*b+c) at 11 against 16 GB/s; see docs/performance.md, W2).
constexpr int64_t kTile = 512;
constexpr int64_t kPad = 64;               // the widest vector step (64 bools in a 512-bit register)
constexpr int64_t kSlotBytes = kTile * 8;  // a program with a c128 register takes twice that

using Kernel = vec::MapKernel;

constexpr bool has_kernel(Op op) {
  switch (op) {
#define TP_CASE(name) case Op::name:
    TAPESTRY_UNARY_FUNCTORS(TP_CASE)
    TAPESTRY_BINARY_FUNCTORS(TP_CASE)
#undef TP_CASE
#define TP_CASE(name) case Op::name:
    TAPESTRY_COMPLEX_PART_FUNCTORS(TP_CASE)
#undef TP_CASE
    case Op::Complex:
    case Op::Cast:
    case Op::Where: return true;
    default: return false;
  }
}

// Every Map op of the registry has a kernel here: adding one without it fails to build.
constexpr bool all_maps_have_kernels() {
#define TP_CHECK(e, name, kind, arity, attrs, doc) \
  if (OpKind::kind == OpKind::Map && !has_kernel(Op::e)) return false;
  TAPESTRY_OPS(TP_CHECK)
#undef TP_CHECK
  return true;
}
static_assert(all_maps_have_kernels(), "a Map op of TAPESTRY_OPS has no functor");

int arity_of(Op op) {
  switch (op) {
#define TP_CASE(name) case Op::name:
    TAPESTRY_BINARY_FUNCTORS(TP_CASE)
#undef TP_CASE
    case Op::Complex: return 2;
    case Op::Where: return 3;
    default: return 1;
  }
}

// The loop of one instruction, from the vector kernels of the instruction set in use.
vec::MapResolved resolve(const MapInstr& ins) {
  const vec::MapResolved k = vec::table().map_kernel(ins);
  internal_check(k.fn != nullptr);
  return k;
}

// ---- Moving elements between views and tiles, by element size. ----

template <class E> void fill_run(E* dst, const E* src, int64_t n) {
  E v = *src;
  for (int64_t i = 0; i < n; ++i) dst[i] = v;
}

template <class E>
void gather_t(char* dst, const char* base, const std::vector<Dim<1>>& dims, int64_t start, int64_t n) {
  E* d = reinterpret_cast<E*>(dst);
  const E* b = reinterpret_cast<const E*>(base);
  Odometer<1> it(dims, start);
  for (int64_t done = 0; done < n;) {
    int64_t len = std::min(it.run_left(), n - done);
    int64_t s = it.inner_stride(0);
    const E* src = b + it.off[0];
    if (s == 1) std::memcpy(d + done, src, len * sizeof(E));
    else if (s == 0) fill_run(d + done, src, len);
    else
      for (int64_t i = 0; i < len; ++i) d[done + i] = src[i * s];
    done += len;
    it.advance(len);
  }
}

template <class E>
void scatter_t(char* base, const char* src, const std::vector<Dim<1>>& dims, int64_t start, int64_t n) {
  E* b = reinterpret_cast<E*>(base);
  const E* s = reinterpret_cast<const E*>(src);
  Odometer<1> it(dims, start);
  for (int64_t done = 0; done < n;) {
    int64_t len = std::min(it.run_left(), n - done);
    int64_t st = it.inner_stride(0);
    E* dst = b + it.off[0];
    for (int64_t i = 0; i < len; ++i) dst[i * st] = s[done + i];
    done += len;
    it.advance(len);
  }
}

// 16 bytes (c128) move as one unit.
struct alignas(8) Bytes16 {
  uint64_t lo, hi;
};

template <class Fn> void by_size(int esize, Fn&& f) {
  switch (esize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    case 16: return f(Bytes16{});
  }
  internal_check(!"unexpected element size");
}

// ---- The prepared program. ----

enum class RegKind { Direct, Gather, Splat, Temp };

struct Reg {
  RegKind kind = RegKind::Temp;
  DType dtype = DType::F32;
  int esize = 4;
  const char* base = nullptr;   // Direct, Gather: the leaf's element 0 (offset applied)
  std::vector<Dim<1>> dims;     // Gather: the leaf's coalesced dims
  alignas(8) char splat[16]{};  // Splat: one element
  int slot = -1;                // scratch tile
};

struct Step {
  Kernel fn = nullptr;  // null: an Op::Full constant (a Splat register)
  int a = -1, b = -1, c = -1, r = -1;
};

struct Program {
  std::vector<Reg> regs;
  std::vector<Step> steps;
  int nleaves = 0;
  int nslots = 0;
  int64_t n = 0;
  char* out = nullptr;
  int out_esize = 4;
  bool wide = false;  // a register holds c128 (16-byte elements)
  bool out_direct = true;
  bool stream = false;    // exact tiles reach `out` by non-temporal stores (see stream_copy)
  bool fold = false;      // no `out`: each tile's result stays in its slot (run_map_fold)
  int64_t slice = kTile;  // an exact tile's steps run over this many elements at a time (run_sliced)
  std::vector<Dim<1>> out_dims;
};

// An output much larger than the caches is written with streaming stores: the line is not
// read first (a plain store costs a read and a write of memory), and the tiles the program
// still reads are not evicted by it. Worth it only where nobody reads the output soon.
constexpr int64_t kStreamMinBytes = int64_t(32) << 20;

#if defined(__AVX__)
constexpr bool kCanStream = true;
// bytes: a multiple of 32; dst 32-byte aligned.
void stream_copy(char* dst, const char* src, int64_t bytes) {
  for (int64_t i = 0; i < bytes; i += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
}
void stream_fence() { _mm_sfence(); }
#else
constexpr bool kCanStream = false;
void stream_copy(char* dst, const char* src, int64_t bytes) { std::memcpy(dst, src, bytes); }
void stream_fence() {}
#endif

// A program with a costly op (its loop costs several times a stream's load) over leaves larger
// than the L2 runs each tile's steps over slices of kSlice elements, prefetching its in-place
// leaves kAhead bytes ahead: a tanh step over a whole tile is about twice the out-of-order
// window, and the hardware prefetcher alone does not keep three streams ahead of it. W2's map
// (tanh(a*b + c), 2^25 f32, CPU time against the triad loop, bench_kernels): 61-65% in whole
// tiles, 70% in slices, 82-88% with the prefetch (docs/performance.md, W2).
constexpr int64_t kSlice = 64;    // 32: the calls cost more than the overlap gains; 128: as 64
constexpr int64_t kAhead = 4096;  // bytes, into L1: 1-4 KiB alike; 8-16 KiB into L2 no better
constexpr int64_t kSliceMinElems = int64_t(1) << 18;

bool costly(Op op) {
  switch (op) {
    case Op::Exp:
    case Op::Log:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Sigmoid:
    case Op::Gelu:
    case Op::Pow:
    case Op::Atan2: return true;
    default: return false;
  }
}

void splat_value(Reg& r, DType t, double real, int64_t integer) {
  dispatch_any_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    if constexpr (std::is_same_v<T, bool>) v = integer != 0;
    else if constexpr (std::is_floating_point_v<T>) v = static_cast<T>(real);
    else if constexpr (is_cx<T>) v = T(static_cast<decltype(v.re)>(real));  // a Lua number: real
    else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) v = T(real);
    else v = static_cast<T>(integer);
    std::memcpy(r.splat, &v, sizeof(T));
  });
}

// A thread's tile registers (64-byte aligned slots): one block per thread, kept between
// maps (a loop of small observations runs thousands of maps a second; a fresh 16 KiB-per-
// register block each time cost an aligned_alloc and malloc_consolidate). A thread runs one
// map's tiles at a time (run_tile never starts another map), so the block is never shared.
struct Scratch {
  char* mem = nullptr;
  int64_t slot_bytes = kSlotBytes;
  char* slot(int i) const { return mem + i * slot_bytes; }
};

// A prepared program and the arrays of one run_map call, kept per thread (MapWorkLease): a
// loop of small observations runs thousands of maps a second, and each fresh vector here
// was a malloc and a free.
struct MapWork {
  Program g;
  std::vector<int> last_use, free_slots;
  std::vector<const char*> ptr;
  std::vector<Scratch> scratch;
};

// Fills g (its arrays reused) from p for `out`; with fold, out has no buffer (run_map_fold).
void prepare(const MapProgram& p, const View& out, MapWork& w, bool fold = false) {
  const bool stream_hint = p.stream_out;
  Program& g = w.g;
  g.steps.clear();
  g.nslots = 0;
  g.n = out.numel();
  const int nleaves = g.nleaves = static_cast<int>(p.leaves.size());
  const int nregs = nleaves + static_cast<int>(p.instrs.size());
  g.regs.resize(nregs);
  for (Reg& r : g.regs) {  // a reused register keeps only its dims' memory
    r.kind = RegKind::Temp;
    r.base = nullptr;
    r.slot = -1;
  }
  for (int i = 0; i < nleaves; ++i) {
    const View& v = p.leaves[i];
    internal_check(v.shape == out.shape);
    Reg& r = g.regs[i];
    r.dtype = v.dtype;
    r.esize = dtype_size(v.dtype);
    r.base = v.byte_ptr();
    coalesce<1>(v.shape, {&v.strides}, r.dims);
    bool scalar = std::all_of(r.dims.begin(), r.dims.end(), [](auto& d) { return d.s[0] == 0; });
    if (scalar) {
      r.kind = RegKind::Splat;
      std::memcpy(r.splat, r.base, r.esize);
    } else if (r.dims.size() == 1 && r.dims[0].s[0] == 1) {
      r.kind = RegKind::Direct;
    } else {
      r.kind = RegKind::Gather;
    }
    r.slot = g.nslots++;  // Direct leaves use theirs for the padded last tile
  }
  // Temps share slots: a slot is free once its last reader ran (liveness by index).
  std::vector<int>& last_use = w.last_use;
  last_use.assign(nregs, -1);
  for (size_t j = 0; j < p.instrs.size(); ++j) {
    for (int x : {p.instrs[j].a, p.instrs[j].b, p.instrs[j].c})
      if (x >= 0) last_use[x] = static_cast<int>(j);
  }
  std::vector<int>& free_slots = w.free_slots;
  free_slots.clear();
  for (size_t j = 0; j < p.instrs.size(); ++j) {
    const MapInstr& ins = p.instrs[j];
    const int ri = nleaves + static_cast<int>(j);
    Reg& r = g.regs[ri];
    Step s;
    s.r = ri;
    r.dtype = ins.out;
    r.esize = dtype_size(ins.out);
    if (ins.op == Op::Full) {
      r.kind = RegKind::Splat;
      splat_value(r, ins.out, ins.real, ins.integer);
      r.slot = g.nslots++;
    } else {
      const vec::MapResolved k = resolve(ins);
      internal_check(k.out == ins.out);
      const int arity = arity_of(ins.op);
      s.fn = k.fn;
      s.a = ins.a;
      s.b = arity >= 2 ? ins.b : -1;
      s.c = arity >= 3 ? ins.c : -1;
      for (int x : {s.a, s.b, s.c}) internal_check(x < ri && (x >= 0 || x == -1));
      internal_check(s.a >= 0 && (arity < 2 || s.b >= 0) && (arity < 3 || s.c >= 0));
      if (ins.op == Op::Where) {
        internal_check(g.regs[s.a].dtype == DType::Bool && g.regs[s.b].dtype == ins.in &&
                       g.regs[s.c].dtype == ins.in);
      } else {
        internal_check(g.regs[s.a].dtype == ins.in && (s.b < 0 || g.regs[s.b].dtype == ins.in));
      }
      r.kind = RegKind::Temp;
      if (free_slots.empty()) {
        r.slot = g.nslots++;
      } else {
        r.slot = free_slots.back();
        free_slots.pop_back();
      }
      // Operands dying here free their slots only after the result took one, so a
      // loop never reads and writes the same tile (the restrict promise holds).
      for (int x : {s.a, s.b, s.c}) {
        if (x >= nleaves && last_use[x] == static_cast<int>(j) && g.regs[x].kind == RegKind::Temp &&
            std::find(free_slots.begin(), free_slots.end(), g.regs[x].slot) == free_slots.end())
          free_slots.push_back(g.regs[x].slot);
      }
    }
    g.steps.push_back(s);
  }
  internal_check(g.regs.back().dtype == out.dtype);
  g.wide = std::any_of(g.regs.begin(), g.regs.end(), [](const Reg& r) { return r.esize > 8; });
  g.fold = fold;
  g.out = fold ? nullptr : out.byte_ptr();
  g.out_esize = dtype_size(out.dtype);
  coalesce<1>(out.shape, {&out.strides}, g.out_dims);
  g.out_direct = g.out_dims.size() == 1 && (g.out_dims[0].s[0] == 1 || g.out_dims[0].n <= 1);
  const bool any_costly =
      std::any_of(p.instrs.begin(), p.instrs.end(), [](const MapInstr& i) { return costly(i.op); });
  g.slice = g.n >= kSliceMinElems && any_costly ? kSlice : kTile;
  g.stream = !fold && kCanStream && g.out_direct && (stream_hint || g.n * g.out_esize >= kStreamMinBytes) &&
             reinterpret_cast<uintptr_t>(g.out) % 32 == 0 && (kTile * g.out_esize) % 32 == 0;
}

char* thread_scratch(size_t bytes) {
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<char, Free> mem;
  thread_local size_t size = 0;
  if (size < bytes) {
    mem.reset(static_cast<char*>(std::aligned_alloc(64, bytes)));
    size = mem ? bytes : 0;
    if (!mem) throw std::bad_alloc();
  }
  return mem.get();
}

// This thread's MapWork, or a fresh one if a map is already being prepared on this thread.
class MapWorkLease {
 public:
  MapWorkLease() : own_(t_busy ? std::make_unique<MapWork>() : nullptr) { t_busy = t_busy || !own_; }
  ~MapWorkLease() {
    if (!own_) t_busy = false;
  }
  MapWorkLease(const MapWorkLease&) = delete;
  MapWorkLease& operator=(const MapWorkLease&) = delete;
  MapWork& get() {
    thread_local MapWork work;
    return own_ ? *own_ : work;
  }

 private:
  static thread_local bool t_busy;
  std::unique_ptr<MapWork> own_;
};
thread_local bool MapWorkLease::t_busy = false;

Scratch make_scratch(const Program& g) {
  Scratch s;
  s.slot_bytes = g.wide ? 2 * kSlotBytes : kSlotBytes;
  s.mem = thread_scratch(static_cast<size_t>(std::max(1, g.nslots)) * s.slot_bytes);
  // A splat is read npad elements at a time: only the first tile's padded length is used.
  const int64_t used = std::min(kTile, round_up(g.n, kPad));
  for (const Reg& r : g.regs) {
    if (r.kind != RegKind::Splat) continue;
    by_size(r.esize, [&](auto e) {
      using E = decltype(e);
      fill_run(reinterpret_cast<E*>(s.slot(r.slot)), reinterpret_cast<const E*>(r.splat), used);
    });
  }
  return s;
}

// An exact tile (its leaves' pointers in place, npad == n) of a program with slices
// (g.slice < kTile): the steps over one slice at a time, each slice's result streamed or
// copied out before the next. Every element still takes the same vector path as in a whole
// tile (a slice is a multiple of kPad), so the bits do not change. Not inlined: run_tile stays
// as lean for the small maps of a loop of observations (W6).
[[gnu::noinline]] void run_sliced(const Program& g, const Scratch& s, std::vector<const char*>& ptr,
                                  int64_t start, int64_t n) {
  const size_t last = g.steps.size() - 1;
  char* out_tile = g.out + start * g.out_esize;
  const bool in_place = g.out_direct && !g.stream && !g.fold;
  auto at = [&](int x, int64_t o) { return x >= 0 ? ptr[x] + o * g.regs[x].esize : nullptr; };
  for (int64_t o = 0; o < n; o += g.slice) {
    const int64_t len = std::min(g.slice, n - o);
    for (int i = 0; i < g.nleaves; ++i) {
      if (g.regs[i].kind != RegKind::Direct) continue;
      const char* p = at(i, o) + kAhead;
      for (int64_t b = 0; b < len * g.regs[i].esize; b += 64) __builtin_prefetch(p + b, 0, 3);
    }
    for (size_t j = 0; j < g.steps.size(); ++j) {
      const Step& st = g.steps[j];
      const Reg& r = g.regs[st.r];
      if (!st.fn) {
        ptr[st.r] = s.slot(r.slot);
        continue;
      }
      char* base = (j == last && in_place) ? out_tile : s.slot(r.slot);
      st.fn(base + o * r.esize, at(st.a, o), at(st.b, o), at(st.c, o), len);
      ptr[st.r] = base;
    }
    if (g.fold) continue;  // the slices' results fill the last step's slot
    const char* result = at(g.steps.back().r, o);
    char* dst = out_tile + o * g.out_esize;
    if (result == dst) continue;
    if (g.stream) stream_copy(dst, result, len * g.out_esize);
    else if (g.out_direct) std::memcpy(dst, result, len * g.out_esize);
    else
      by_size(g.out_esize,
              [&](auto e) { scatter_t<decltype(e)>(g.out, result, g.out_dims, start + o, len); });
  }
}

void run_tile(const Program& g, const Scratch& s, std::vector<const char*>& ptr, int64_t tile) {
  const int64_t start = tile * kTile;
  const int64_t n = std::min(kTile, g.n - start);
  const int64_t npad = round_up(n, kPad);
  const bool full = n == kTile;
  // No padding needed (a whole tile, or a small map of a multiple of kPad elements): the
  // kernels may read leaves and write the output in place.
  const bool exact = npad == n;
  for (int i = 0; i < g.nleaves; ++i) {
    const Reg& r = g.regs[i];
    if (r.kind == RegKind::Splat) {
      ptr[i] = s.slot(r.slot);
      continue;
    }
    char* dst = s.slot(r.slot);
    if (r.kind == RegKind::Direct) {
      if (exact) {
        ptr[i] = r.base + start * r.esize;
        if (g.fold && g.slice >= n) {  // read ahead, as run_sliced does its slices
          const char* ahead = ptr[i] + kAhead;
          for (int64_t b = 0; b < n * r.esize; b += 64) __builtin_prefetch(ahead + b, 0, 3);
        }
        continue;
      }
      std::memcpy(dst, r.base + start * r.esize, n * r.esize);
    } else {
      // A tile inside one contiguous run of the leaf is read in place.
      Odometer<1> it(r.dims, start);
      if (exact && it.inner_stride(0) == 1 && it.run_left() >= n) {
        ptr[i] = r.base + it.off[0] * r.esize;
        continue;
      }
      by_size(r.esize, [&](auto e) { gather_t<decltype(e)>(dst, r.base, r.dims, start, n); });
    }
    std::memset(dst + n * r.esize, 0, (npad - n) * r.esize);
    ptr[i] = dst;
  }
  if (exact && g.slice < n) return run_sliced(g, s, ptr, start, n);
  const size_t last = g.steps.size() - 1;
  for (size_t j = 0; j < g.steps.size(); ++j) {
    const Step& st = g.steps[j];
    const Reg& r = g.regs[st.r];
    if (!st.fn) {
      ptr[st.r] = s.slot(r.slot);
      continue;
    }
    char* dst = (j == last && exact && g.out_direct && !g.stream && !g.fold) ? g.out + start * r.esize
                                                                             : s.slot(r.slot);
    st.fn(dst, ptr[st.a], st.b >= 0 ? ptr[st.b] : nullptr, st.c >= 0 ? ptr[st.c] : nullptr, npad);
    ptr[st.r] = dst;
  }
  if (g.fold) return;  // the result stays in ptr[the last step's register]
  const char* result = ptr[g.steps.back().r];
  char* out_tile = g.out + start * g.out_esize;
  if (result == out_tile) return;
  if (g.stream && full) {
    stream_copy(out_tile, result, n * g.out_esize);
  } else if (g.out_direct) {
    std::memcpy(out_tile, result, n * g.out_esize);
  } else {
    by_size(g.out_esize, [&](auto e) { scatter_t<decltype(e)>(g.out, result, g.out_dims, start, n); });
  }
}

// A large leaf read across its rows (a transposed view) costs a cache line and a TLB
// entry per element in the tile gather; a tiled copy_view first is about 4x cheaper.
// Broadcast leaves are left alone (a copy would materialize the broadcast).
bool worth_materializing(const View& v) {
  constexpr int64_t kMinElems = int64_t(1) << 16;
  if (v.numel() < kMinElems) return false;
  const auto dims = coalesce<1>(v.shape, {&v.strides});
  const int64_t inner = dims.back().s[0];
  if (inner == 0 || std::abs(inner) < 16) return false;
  return std::none_of(dims.begin(), dims.end(), [](const Dim<1>& d) { return d.s[0] == 0; });
}

// p0, or (any leaf worth_materializing) a copy of it whose such leaves are contiguous copies,
// kept alive by `copies`.
const MapProgram& materialized_leaves(const MapProgram& p0, std::vector<std::shared_ptr<Value>>& copies,
                                      MapProgram& p1) {
  if (!std::any_of(p0.leaves.begin(), p0.leaves.end(), worth_materializing)) return p0;
  p1 = p0;
  for (View& v : p1.leaves) {
    if (!worth_materializing(v)) continue;
    copies.push_back(Value::alloc(v.dtype, v.shape));
    copy_view(v, copies.back()->view());
    v = copies.back()->view();
  }
  return p1;
}

// Below this many elements a map runs on the calling thread (waking a worker costs more).
constexpr int64_t kSerialElems = 32768;

// The tiles of a prepared program on the calling thread.
void run_serial(const Program& g, std::vector<const char*>& ptr) {
  const Scratch s = make_scratch(g);
  ptr.assign(g.regs.size(), nullptr);
  const int64_t ntiles = (g.n + kTile - 1) / kTile;
  for (int64_t t = 0; t < ntiles; ++t) run_tile(g, s, ptr, t);
  if (g.stream) stream_fence();
}

// Element by element: a vector's == calls memcmp, which costs more than the compare for the few
// dims a map has (PreparedMap::run asks this of every leaf, five maps a CG iteration).
bool same_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

bool same_layout(const View& a, const View& b) {
  return a.dtype == b.dtype && same_dims(a.shape, b.shape) && same_dims(a.strides, b.strides);
}

}  // namespace

struct PreparedMap::State {
  MapWork w;
  bool ready = false;
  std::vector<MapInstr> instrs;  // what g was prepared from: the instructions,
  std::vector<View> leaves;      // the leaves' layouts (no buffers kept),
  View out;                      // and the output's
};

PreparedMap::PreparedMap() = default;
PreparedMap::~PreparedMap() = default;
PreparedMap::PreparedMap(PreparedMap&&) noexcept = default;
PreparedMap& PreparedMap::operator=(PreparedMap&&) noexcept = default;

void PreparedMap::run(const MapProgram& p, const View& out) {
  if (out.numel() >= kSerialElems || p.instrs.empty() || out.numel() == 0) return run_map(p, out);
  if (!s_) s_ = std::make_unique<State>();
  State& st = *s_;
  Program& g = st.w.g;
  bool same = st.ready && p.leaves.size() == st.leaves.size() && p.instrs.size() == st.instrs.size() &&
              same_layout(out, st.out);
  for (size_t j = 0; same && j < p.instrs.size(); ++j) {
    const MapInstr &a = p.instrs[j], &b = st.instrs[j];
    same = a.op == b.op && a.out == b.out && a.in == b.in && a.a == b.a && a.b == b.b && a.c == b.c;
  }
  for (size_t i = 0; same && i < p.leaves.size(); ++i) same = same_layout(p.leaves[i], st.leaves[i]);
  if (!same) {
    st.ready = false;
    prepare(p, out, st.w);  // (small: no leaf is worth materializing, as in run_map)
    st.instrs = p.instrs;
    st.leaves.resize(p.leaves.size());
    for (size_t i = 0; i < p.leaves.size(); ++i) {
      st.leaves[i] = p.leaves[i];
      st.leaves[i].buf.reset();
    }
    st.out = out;
    st.out.buf.reset();
    st.ready = true;
  } else {  // what prepare reads from the data: addresses, broadcast scalars, constants
    for (int i = 0; i < g.nleaves; ++i) {
      Reg& r = g.regs[static_cast<size_t>(i)];
      r.base = p.leaves[static_cast<size_t>(i)].byte_ptr();
      if (r.kind == RegKind::Splat) std::memcpy(r.splat, r.base, static_cast<size_t>(r.esize));
    }
    for (size_t j = 0; j < p.instrs.size(); ++j)
      if (p.instrs[j].op == Op::Full)
        splat_value(g.regs[static_cast<size_t>(g.nleaves) + j], p.instrs[j].out, p.instrs[j].real,
                    p.instrs[j].integer);
    g.out = out.byte_ptr();
    g.stream = kCanStream && g.out_direct && (p.stream_out || g.n * g.out_esize >= kStreamMinBytes) &&
               reinterpret_cast<uintptr_t>(g.out) % 32 == 0 && (kTile * g.out_esize) % 32 == 0;
  }
  run_serial(g, st.w.ptr);
}

namespace {

// The map p0 over `shape` as a TileSource for `fold` (fold_tiles or fold_rows): each tile
// computed into the worker's L1 scratch slot, never written out.
template <class Fold> void fold_map_tiles(const MapProgram& p0, const Shape& shape, Fold&& fold) {
  std::vector<std::shared_ptr<Value>> copies;
  MapProgram p1;
  const MapProgram& p = materialized_leaves(p0, copies, p1);
  View result;  // the map's result as prepare sees it: no buffer, nothing is written
  result.dtype = p.instrs.back().out;
  result.shape = shape;
  result.strides = contiguous_strides(shape);
  MapWorkLease lease;
  MapWork& w = lease.get();
  prepare(p, result, w, /*fold=*/true);
  const Program& g = w.g;
  const int last = g.steps.back().r;
  w.scratch.assign(static_cast<size_t>(pool_width()), Scratch{});
  std::vector<std::vector<const char*>> ptrs(static_cast<size_t>(pool_width()));
  fold(result.dtype, g.n, [&](int64_t tile, int worker) -> const void* {
    Scratch& s = w.scratch[static_cast<size_t>(worker)];
    std::vector<const char*>& ptr = ptrs[static_cast<size_t>(worker)];
    if (!s.mem) {
      s = make_scratch(g);
      ptr.assign(g.regs.size(), nullptr);
    }
    run_tile(g, s, ptr, tile);
    return ptr[static_cast<size_t>(last)];
  });
}

}  // namespace

void run_map_fold(const MapProgram& p0, const Shape& shape, Op op, const View& out) {
  internal_check(!p0.instrs.empty() && out.numel() == 1);
  fold_map_tiles(p0, shape,
                 [&](DType t, int64_t n, const TileSource& tile) { fold_tiles(op, t, n, kTile, tile, out); });
}

void run_map_fold_rows(const MapProgram& p0, const Shape& shape, Op op, int64_t row, const View& out) {
  internal_check(!p0.instrs.empty() && row > 0 && out.numel() * row == numel(shape));
  fold_map_tiles(p0, shape, [&](DType t, int64_t n, const TileSource& tile) {
    fold_rows(op, t, n / row, row, kTile, tile, out);
  });
}

void run_map(const MapProgram& p0, const View& out) {
  if (out.numel() == 0) return;
  if (p0.instrs.empty()) {
    internal_check(p0.leaves.size() == 1);
    copy_view(p0.leaves[0], out);
    return;
  }
  std::vector<std::shared_ptr<Value>> copies;
  MapProgram p1;
  const MapProgram& p = materialized_leaves(p0, copies, p1);
  MapWorkLease lease;
  MapWork& w = lease.get();
  prepare(p, out, w);
  const Program& g = w.g;
  const int64_t ntiles = (g.n + kTile - 1) / kTile;
  if (g.n < kSerialElems) return run_serial(g, w.ptr);
  w.scratch.assign(static_cast<size_t>(pool_width()), Scratch{});
  parallel_for(ntiles, grain_for(ntiles, 4), [&](int64_t lo, int64_t hi, int worker) {
    Scratch& s = w.scratch[worker];
    if (!s.mem) s = make_scratch(g);
    std::vector<const char*> ptr(g.regs.size(), nullptr);
    for (int64_t t = lo; t < hi; ++t) run_tile(g, s, ptr, t);
    if (g.stream) stream_fence();  // visible to whoever reads out after the join
  });
}

}  // namespace tapestry::cpu
