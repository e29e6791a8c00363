// run_map on the device: the fused MapProgram interpreter over the shared functors
// (kernels/functors.hpp), so every op computes exactly the CPU's math.
//   cuda::MapProgram p{{xv, yv}, {{Op::Mul, F32, F32, 0, 1}, {Op::Tanh, F32, F32, 2}}};
//   cuda::run_map(p, outv);     // out = tanh(x * y), one pass over device memory
// One thread per element (grid-stride): it loads every leaf through its own strides, runs the
// instructions over a per-thread register file and stores the last register. The program
// travels as a kernel parameter (no copy, constant-cache broadcast to every thread).
#include <cuda_runtime.h>

#include "engine/ir/error.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/functors.hpp"

namespace tapestry::cuda {
namespace {

constexpr int kMaxLeaves = 16, kMaxInstrs = 40, kMaxRegs = kMaxLeaves + kMaxInstrs;

union Slot {
  double d;
  float f;
  int64_t l;
  int32_t i;
  bool b;
};
template <class T> __device__ T get(const Slot& s) {
  if constexpr (std::is_same_v<T, double>) return s.d;
  else if constexpr (std::is_same_v<T, float>) return s.f;
  else if constexpr (std::is_same_v<T, int64_t>) return s.l;
  else if constexpr (std::is_same_v<T, int32_t>) return s.i;
  else return s.b;
}
template <class T> __device__ Slot put(T v) {
  Slot s;
  if constexpr (std::is_same_v<T, double>) s.d = v;
  else if constexpr (std::is_same_v<T, float>) s.f = v;
  else if constexpr (std::is_same_v<T, int64_t>) s.l = v;
  else if constexpr (std::is_same_v<T, int32_t>) s.i = v;
  else s.b = v;
  return s;
}

struct Instr {
  Op op;
  DType out, in;
  int8_t a, b, c;
  double real;
  int64_t integer;
};
struct Prog {
  int nleaves, ninstrs;
  bool flat;  // every operand contiguous: offsets are the flat index
  DType leaf_dtype[kMaxLeaves];
  const char* leaf[kMaxLeaves];
  DType out_dtype;
  char* out;
  Strided<kMaxLeaves + 1> idx;  // operand kMaxLeaves is the output
  Instr ins[kMaxInstrs];
};

__device__ Slot load(const char* p, DType t, int64_t off) {
  switch (t) {
    case DType::Bool: return put(reinterpret_cast<const bool*>(p)[off]);
    case DType::I32: return put(reinterpret_cast<const int32_t*>(p)[off]);
    case DType::I64: return put(reinterpret_cast<const int64_t*>(p)[off]);
    case DType::F32: return put(reinterpret_cast<const float*>(p)[off]);
    default: return put(reinterpret_cast<const double*>(p)[off]);
  }
}
__device__ void store(char* p, DType t, int64_t off, Slot v) {
  switch (t) {
    case DType::Bool: reinterpret_cast<bool*>(p)[off] = v.b; break;
    case DType::I32: reinterpret_cast<int32_t*>(p)[off] = v.i; break;
    case DType::I64: reinterpret_cast<int64_t*>(p)[off] = v.l; break;
    case DType::F32: reinterpret_cast<float*>(p)[off] = v.f; break;
    default: reinterpret_cast<double*>(p)[off] = v.d; break;
  }
}

template <class From> __device__ Slot cast_to(DType to, From x) {
  switch (to) {
    case DType::Bool: return put(fn::Cast<From, bool>{}(x));
    case DType::I32: return put(fn::Cast<From, int32_t>{}(x));
    case DType::I64: return put(fn::Cast<From, int64_t>{}(x));
    case DType::F32: return put(fn::Cast<From, float>{}(x));
    default: return put(fn::Cast<From, double>{}(x));
  }
}

template <class T> __device__ Slot apply(const Instr& ins, const Slot* r) {
  const T a = get<T>(r[ins.a]);
  switch (ins.op) {
#define TP_CASE(name) \
  case Op::name: return put(fn::name<T>{}(a));
    TAPESTRY_UNARY_FUNCTORS(TP_CASE)
#undef TP_CASE
#define TP_CASE(name) \
  case Op::name: return put(fn::name<T>{}(a, get<T>(r[ins.b])));
    TAPESTRY_BINARY_FUNCTORS(TP_CASE)
#undef TP_CASE
    case Op::Where: return put(fn::Where<T>{}(r[ins.a].b, get<T>(r[ins.b]), get<T>(r[ins.c])));
    case Op::Cast: return cast_to<T>(ins.out, a);
    default: return put(T{});  // rejected on the host before launch
  }
}

__device__ Slot eval(const Instr& ins, const Slot* r) {
  if (ins.op == Op::Full) {
    switch (ins.out) {
      case DType::Bool: return put(ins.integer != 0);
      case DType::I32: return put(static_cast<int32_t>(ins.integer));
      case DType::I64: return put(ins.integer);
      case DType::F32: return put(static_cast<float>(ins.real));
      default: return put(ins.real);
    }
  }
  switch (ins.in) {
    case DType::Bool: return apply<bool>(ins, r);
    case DType::I32: return apply<int32_t>(ins, r);
    case DType::I64: return apply<int64_t>(ins, r);
    case DType::F32: return apply<float>(ins, r);
    default: return apply<double>(ins, r);
  }
}

__global__ void map_kernel(const Prog p, int64_t n) {
  TP_GRID_LOOP(i, n) {
    Slot r[kMaxRegs];
    int64_t idx[kMaxDims];
    if (!p.flat) {  // the multi-index once, then a dot product per operand
      int64_t q = i;
      for (int d = p.idx.nd - 1; d >= 0; --d) {
        idx[d] = q % p.idx.n[d];
        q /= p.idx.n[d];
      }
    }
    auto off = [&](int k) {
      if (p.flat) return i * p.idx.s[k][0];
      int64_t o = 0;
      for (int d = 0; d < p.idx.nd; ++d) o += idx[d] * p.idx.s[k][d];
      return o;
    };
    for (int l = 0; l < p.nleaves; ++l) r[l] = load(p.leaf[l], p.leaf_dtype[l], off(l));
    for (int j = 0; j < p.ninstrs; ++j) r[p.nleaves + j] = eval(p.ins[j], r);
    store(p.out, p.out_dtype, off(kMaxLeaves), r[p.nleaves + p.ninstrs - 1]);
  }
}

bool is_map_op(Op op) { return op_def(op).kind == OpKind::Map || op == Op::Full; }

}  // namespace

void run_map(const MapProgram& mp, const DView& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  // Bigger programs are rare (the fuser caps them); the caller runs them on the CPU.
  user_check(
      mp.leaves.size() <= size_t(kMaxLeaves) && mp.instrs.size() <= size_t(kMaxInstrs) && !mp.instrs.empty(),
      "CUDA map: program of ", mp.leaves.size(), " leaves and ", mp.instrs.size(), " instructions exceeds ",
      kMaxLeaves, "/", kMaxInstrs);
  Prog p{};
  p.nleaves = static_cast<int>(mp.leaves.size());
  p.ninstrs = static_cast<int>(mp.instrs.size());
  p.out = out.byte_ptr();
  p.out_dtype = out.dtype;
  std::array<const Strides*, kMaxLeaves + 1> strides;
  strides.fill(&out.strides);
  for (int l = 0; l < p.nleaves; ++l) {
    const DView& v = mp.leaves[l];
    internal_check(v.shape == out.shape);
    p.leaf[l] = v.byte_ptr();
    p.leaf_dtype[l] = v.dtype;
    strides[l] = &v.strides;
  }
  for (int j = 0; j < p.ninstrs; ++j) {
    const MapInstr& m = mp.instrs[j];
    internal_check(is_map_op(m.op) && m.a < p.nleaves + j && m.b < p.nleaves + j && m.c < p.nleaves + j);
    p.ins[j] = Instr{m.op,
                     m.out,
                     m.in,
                     int8_t(m.a < 0 ? 0 : m.a),
                     int8_t(m.b < 0 ? 0 : m.b),
                     int8_t(m.c < 0 ? 0 : m.c),
                     m.real,
                     m.integer};
  }
  internal_check(mp.instrs.back().out == out.dtype);
  p.idx = make_strided<kMaxLeaves + 1>(out.shape, strides);
  p.flat = p.idx.nd == 1;
  map_kernel<<<blocks_for(n), kThreads, 0, context().s()>>>(p, n);
  check_launch("map kernel");
}

void map_on_device(Op op, DType in, DType out_dtype, const void* a, const void* b, const void* c, void* out,
                   int64_t n) {
  internal_check(op_def(op).kind == OpKind::Map);
  MapProgram p;
  const Shape s{n};
  p.leaves.push_back(dview(const_cast<void*>(a), op == Op::Where ? DType::Bool : in, s));
  if (b) p.leaves.push_back(dview(const_cast<void*>(b), in, s));
  if (c) p.leaves.push_back(dview(const_cast<void*>(c), in, s));
  p.instrs.push_back(MapInstr{op, out_dtype, in, 0, b ? 1 : -1, c ? 2 : -1});
  run_map(p, dview(out, out_dtype, s));
  synchronize();
}

}  // namespace tapestry::cuda
