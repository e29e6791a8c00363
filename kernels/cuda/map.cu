// run_map on the device: the fused MapProgram interpreter over the shared functors
// (kernels/functors.hpp), so every op computes exactly the CPU's math.
//   cuda::MapProgram p{{xv, yv}, {{Op::Mul, F32, F32, 0, 1}, {Op::Tanh, F32, F32, 2}}};
//   cuda::run_map(p, outv);     // out = tanh(x * y), one pass over device memory
// One thread per element (grid-stride): it loads every leaf through its own strides, runs the
// instructions over a per-thread register file and stores the last register. The program
// travels as a kernel parameter (no copy, constant-cache broadcast to every thread).
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "engine/ir/error.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/functors.hpp"

namespace tapestry::cuda {
namespace {

constexpr int kMaxLeaves = 16, kMaxInstrs = 40, kMaxRegs = kMaxLeaves + kMaxInstrs;

// One register: any dtype's element (16 bytes, for c128).
union Slot {
  double d;
  float f;
  int64_t l;
  int32_t i;
  int8_t i8;
  uint8_t u8;
  bool b;
  f16 h;
  bf16 bh;
  c64 z;
  c128 zz;
};
template <class T> __device__ T get(const Slot& s) {
  if constexpr (std::is_same_v<T, double>) return s.d;
  else if constexpr (std::is_same_v<T, float>) return s.f;
  else if constexpr (std::is_same_v<T, int64_t>) return s.l;
  else if constexpr (std::is_same_v<T, int32_t>) return s.i;
  else if constexpr (std::is_same_v<T, int8_t>) return s.i8;
  else if constexpr (std::is_same_v<T, uint8_t>) return s.u8;
  else if constexpr (std::is_same_v<T, f16>) return s.h;
  else if constexpr (std::is_same_v<T, bf16>) return s.bh;
  else if constexpr (std::is_same_v<T, c64>) return s.z;
  else if constexpr (std::is_same_v<T, c128>) return s.zz;
  else return s.b;
}
template <class T> __device__ Slot put(T v) {
  Slot s;
  if constexpr (std::is_same_v<T, double>) s.d = v;
  else if constexpr (std::is_same_v<T, float>) s.f = v;
  else if constexpr (std::is_same_v<T, int64_t>) s.l = v;
  else if constexpr (std::is_same_v<T, int32_t>) s.i = v;
  else if constexpr (std::is_same_v<T, int8_t>) s.i8 = v;
  else if constexpr (std::is_same_v<T, uint8_t>) s.u8 = v;
  else if constexpr (std::is_same_v<T, f16>) s.h = v;
  else if constexpr (std::is_same_v<T, bf16>) s.bh = v;
  else if constexpr (std::is_same_v<T, c64>) s.z = v;
  else if constexpr (std::is_same_v<T, c128>) s.zz = v;
  else s.b = v;
  return s;
}

// f(T{}) with the element type of t (a device-side dispatch_any_dtype).
template <class F> __device__ Slot with_type(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(bool{});
    case DType::I8: return f(int8_t{});
    case DType::U8: return f(uint8_t{});
    case DType::I32: return f(int32_t{});
    case DType::I64: return f(int64_t{});
    case DType::F16: return f(f16{});
    case DType::BF16: return f(bf16{});
    case DType::F32: return f(float{});
    case DType::C64: return f(c64{});
    case DType::C128: return f(c128{});
    default: return f(double{});
  }
}

struct Instr {
  Op op;
  DType out, in;
  int8_t a, b, c;  // the registers of the operands
  int8_t dst;      // the register of the result
  double real;
  int64_t integer;
};
struct Prog {
  int nleaves, ninstrs;
  bool flat;  // every operand contiguous: offsets are the flat index
  int8_t leaf_reg[kMaxLeaves];
  DType leaf_dtype[kMaxLeaves];
  const char* leaf[kMaxLeaves];
  DType out_dtype;
  char* out;
  Strided<kMaxLeaves + 1> idx;  // operand kMaxLeaves is the output
  Instr ins[kMaxInstrs];
};

__device__ Slot load(const char* p, DType t, int64_t off) {
  return with_type(t, [&](auto e) { return put(reinterpret_cast<const decltype(e)*>(p)[off]); });
}
__device__ void store(char* p, DType t, int64_t off, Slot v) {
  with_type(t, [&](auto e) {
    using E = decltype(e);
    reinterpret_cast<E*>(p)[off] = get<E>(v);
    return v;
  });
}

template <class From> __device__ Slot cast_to(DType to, From x) {
  return with_type(to, [&](auto e) { return put(fn::Cast<From, decltype(e)>{}(x)); });
}

// The functors instantiated for each operand type: real types take the lists of functors.hpp,
// complex types the complex lists, f16 and bf16 only casts and where (the builders compute
// them in f32), so no functor is compiled for a type it does not take.
template <class T> __device__ Slot apply(const Instr& ins, const Slot* r) {
  const T a = get<T>(r[ins.a]);
  if (ins.op == Op::Where) return put(fn::Where<T>{}(r[ins.a].b, get<T>(r[ins.b]), get<T>(r[ins.c])));
  if (ins.op == Op::Cast) return cast_to<T>(ins.out, a);
  if constexpr (is_cx<T>) {
    switch (ins.op) {
#define TP_CASE(name) \
  case Op::name: return put(fn::name<T>{}(a));
      TAPESTRY_COMPLEX_UNARY_FUNCTORS(TP_CASE)
      TAPESTRY_COMPLEX_PART_FUNCTORS(TP_CASE)
#undef TP_CASE
#define TP_CASE(name) \
  case Op::name: return put(fn::name<T>{}(a, get<T>(r[ins.b])));
      TAPESTRY_COMPLEX_BINARY_FUNCTORS(TP_CASE)
#undef TP_CASE
      default: return put(T{});  // rejected on the host before launch
    }
  } else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
    return put(T{});  // computed in f32: never reached
  } else {
    switch (ins.op) {
#define TP_CASE(name) \
  case Op::name: return put(fn::name<T>{}(a));
      TAPESTRY_UNARY_FUNCTORS(TP_CASE)
#undef TP_CASE
#define TP_CASE(name) \
  case Op::name: return put(fn::name<T>{}(a, get<T>(r[ins.b])));
      TAPESTRY_BINARY_FUNCTORS(TP_CASE)
#undef TP_CASE
      case Op::Complex:
        if constexpr (std::is_floating_point_v<T>) return put(fn::MakeComplex<T>{}(a, get<T>(r[ins.b])));
        return put(T{});
      default: return put(T{});  // rejected on the host before launch
    }
  }
}

__device__ Slot eval(const Instr& ins, const Slot* r) {
  if (ins.op == Op::Full) {
    return with_type(ins.out, [&](auto e) {
      using E = decltype(e);
      if constexpr (std::is_same_v<E, bool>) return put(ins.integer != 0);
      else if constexpr (std::is_integral_v<E>) return put(static_cast<E>(ins.integer));
      else if constexpr (is_cx<E>) return put(E(static_cast<decltype(E{}.re)>(ins.real)));
      else return put(E(ins.real));  // f16, bf16, f32, f64
    });
  }
  return with_type(ins.in, [&](auto e) { return apply<decltype(e)>(ins, r); });
}

// R registers a thread: the register file is indexed at run time, so it lives in local memory,
// and its size decides whether that stays in L1/L2 (8 registers, 128 bytes) or spills to HBM
// (kMaxRegs, 896 bytes: W2 ran at 14% of HBM bandwidth on an H200 so).
template <int R> __global__ void map_kernel(const Prog p, int64_t n) {
  TP_GRID_LOOP(i, n) {
    Slot r[R];
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
    for (int l = 0; l < p.nleaves; ++l) r[p.leaf_reg[l]] = load(p.leaf[l], p.leaf_dtype[l], off(l));
    for (int j = 0; j < p.ninstrs; ++j) r[p.ins[j].dst] = eval(p.ins[j], r);
    store(p.out, p.out_dtype, off(kMaxLeaves), r[p.ins[p.ninstrs - 1].dst]);
  }
}

bool is_map_op(Op op) { return op_def(op).kind == OpKind::Map || op == Op::Full; }

constexpr int kSmallRegs = 8;

// Gives the program's values (leaves, then one per instruction) registers that are reused once
// a value's last reader ran (an instruction reads its operands before its result is written).
// Returns the registers used; the program is left as it was when more than kSmallRegs are needed.
int allocate_registers(Prog& p, const std::vector<MapInstr>& instrs) {
  const int nv = p.nleaves + p.ninstrs;
  std::vector<int> last(static_cast<size_t>(nv), -1);
  for (int j = 0; j < p.ninstrs; ++j)
    for (int v : {instrs[j].a, instrs[j].b, instrs[j].c})
      if (v >= 0) last[static_cast<size_t>(v)] = j;
  last[static_cast<size_t>(nv - 1)] = p.ninstrs;  // the result: stored after the last instruction
  std::vector<int> reg(static_cast<size_t>(nv), -1);
  bool used[kSmallRegs] = {};
  int most = 0;
  auto take = [&](int v) {
    for (int k = 0; k < kSmallRegs; ++k)
      if (!used[k]) {
        used[k] = true;
        reg[static_cast<size_t>(v)] = k;
        most = std::max(most, k + 1);
        return true;
      }
    return false;
  };
  for (int l = 0; l < p.nleaves; ++l)
    if (!take(l)) return kMaxRegs;
  for (int l = 0; l < p.nleaves; ++l)
    if (last[static_cast<size_t>(l)] < 0) used[reg[static_cast<size_t>(l)]] = false;  // read by no one
  for (int j = 0; j < p.ninstrs; ++j) {
    for (int v : {instrs[j].a, instrs[j].b, instrs[j].c})
      if (v >= 0 && last[static_cast<size_t>(v)] == j) used[reg[static_cast<size_t>(v)]] = false;
    const int v = p.nleaves + j;
    if (!take(v)) return kMaxRegs;
    if (last[static_cast<size_t>(v)] < 0) used[reg[static_cast<size_t>(v)]] = false;  // a dead value
  }
  for (int l = 0; l < p.nleaves; ++l) p.leaf_reg[l] = static_cast<int8_t>(reg[static_cast<size_t>(l)]);
  for (int j = 0; j < p.ninstrs; ++j) {
    Instr& ins = p.ins[j];
    const MapInstr& m = instrs[j];
    ins.a = static_cast<int8_t>(m.a < 0 ? 0 : reg[static_cast<size_t>(m.a)]);
    ins.b = static_cast<int8_t>(m.b < 0 ? 0 : reg[static_cast<size_t>(m.b)]);
    ins.c = static_cast<int8_t>(m.c < 0 ? 0 : reg[static_cast<size_t>(m.c)]);
    ins.dst = static_cast<int8_t>(reg[static_cast<size_t>(p.nleaves + j)]);
  }
  return most;
}

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
                     int8_t(p.nleaves + j),
                     m.real,
                     m.integer};
  }
  for (int l = 0; l < p.nleaves; ++l) p.leaf_reg[l] = static_cast<int8_t>(l);
  internal_check(mp.instrs.back().out == out.dtype);
  p.idx = make_strided<kMaxLeaves + 1>(out.shape, strides);
  p.flat = p.idx.nd == 1;
  if (allocate_registers(p, mp.instrs) <= kSmallRegs)
    map_kernel<kSmallRegs><<<blocks_for(n), kThreads, 0, context().s()>>>(p, n);
  else map_kernel<kMaxRegs><<<blocks_for(n), kThreads, 0, context().s()>>>(p, n);
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
