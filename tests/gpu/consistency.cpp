// gpu.consistency: every kernel family on the device against the CPU kernels on the same inputs.
//   gpu_consistency            # exit 0: all agree; 1: mismatches listed; 77: no GPU (skipped)
// Tolerances: exact for integers, bools, copies, rand and stencils (same order, f64 accumulation);
// a few ulp for libm functions (CUDA's and glibc's differ in the last bit); 1e-4 relative for
// cuBLAS products (another summation order); cuFFT and cuSOLVER 1e-4 (f32) or 1e-10 (f64) of the
// largest magnitude.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "engine/ir/attrs.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/functors.hpp"
#include "tests/gpu/consistency.hpp"

using namespace tapestry;
using namespace tapestry::gpucheck;

namespace {

const DType kAll[] = {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64};

void check_map() {
  const Shape s{5, 7, 9};
  for (DType t : kAll) {
    auto a = sample(t, s, 1), b = sample(t, {7, 5, 9}, 2);
    const View bt = b->view().permuted({1, 0, 2});  // a strided leaf
    Dev da = upload(a->view()), db = upload(b->view());
    const cuda::DView dbt = like(db.v, bt);
    auto run = [&](Op op, bool binary) {
      const DType rt = (op_def(op).name == std::string("lt") || op == Op::Eq || op == Op::Ne ||
                        op == Op::Le || op == Op::Gt || op == Op::Ge || op == Op::Lt ||
                        op == Op::LogicalAnd || op == Op::LogicalOr || op == Op::LogicalNot)
                           ? DType::Bool
                           : t;
      cpu::MapProgram cp;
      cp.leaves = {a->view()};
      if (binary) cp.leaves.push_back(bt);
      cp.instrs = {{op, rt, t, 0, binary ? 1 : -1}};
      auto want = Value::alloc(rt, s);
      cpu::run_map(cp, want->view());
      cuda::MapProgram gp{{da.v}, cp.instrs};
      if (binary) gp.leaves.push_back(dbt);
      Dev out = upload(want->view());
      cuda::run_map(gp, out.v);
      const bool float_math = op == Op::Exp || op == Op::Log || op == Op::Sqrt || op == Op::Rsqrt ||
                              op == Op::Sin || op == Op::Cos || op == Op::Tanh || op == Op::Sigmoid ||
                              op == Op::Gelu || op == Op::Atan2 || op == Op::Pow;
      compare(std::string("map ") + std::string(op_def(op).name) + " " + std::string(dtype_name(t)), *want,
              *download(out.v), 4e-6, float_math && !is_float(t) && t != DType::Bool ? 1 : 0);
    };
#define TP_U(name) run(Op::name, false);
    TAPESTRY_UNARY_FUNCTORS(TP_U)
#undef TP_U
#define TP_B(name) run(Op::name, true);
    TAPESTRY_BINARY_FUNCTORS(TP_B)
#undef TP_B
    // a fused program: where(a < b, a * 2 (a Full), cast(b)) over the strided leaf
    cpu::MapProgram cp;
    cp.leaves = {a->view(), bt};
    cp.instrs = {{Op::Lt, DType::Bool, t, 0, 1},
                 {Op::Full, t, t, -1, -1, -1, 2.0, 2},
                 {Op::Mul, t, t, 0, 3},
                 {Op::Where, t, t, 2, 4, 1},
                 {Op::Cast, DType::F64, t, 5}};
    auto want = Value::alloc(DType::F64, s);
    cpu::run_map(cp, want->view());
    Dev out = upload(want->view());
    cuda::run_map(cuda::MapProgram{{da.v, dbt}, cp.instrs}, out.v);
    compare("fused program " + std::string(dtype_name(t)), *want, *download(out.v), 0);
  }
}

void check_reduce() {
  auto x0 = sample(DType::F64, {6, 5, 300}, 3);
  for (DType t : kAll) {
    auto x = Value::alloc(t, {6, 5, 300});
    cpu::MapProgram cast{{x0->view()}, {{Op::Cast, t, DType::F64, 0}}};
    cpu::run_map(cast, x->view());
    const View xp = x->view().permuted({2, 0, 1});  // {300, 6, 5}, strided
    Dev dx = upload(x->view());
    const cuda::DView dxp = like(dx.v, xp);
    for (Op op : {Op::Sum, Op::Prod, Op::Max, Op::Min, Op::All, Op::Any})
      for (const std::vector<int>& dims : std::vector<std::vector<int>>{{0}, {1}, {2}, {0, 2}, {0, 1, 2}}) {
        Shape os;
        for (int d = 0; d < 3; ++d)
          if (std::find(dims.begin(), dims.end(), d) == dims.end()) os.push_back(xp.shape[d]);
        const DType ot = (op == Op::All || op == Op::Any)                    ? DType::Bool
                         : (op == Op::Sum || op == Op::Prod) && !is_float(t) ? DType::I64
                                                                             : t;
        auto want = Value::alloc(ot, os);
        cpu::run_reduce(op, xp, dims, want->view());
        Dev out = upload(want->view());
        cuda::run_reduce(op, dxp, dims, out.v);
        compare(std::string("reduce ") + std::string(op_def(op).name) + " " + std::string(dtype_name(t)) +
                    " dims " + std::to_string(dims.size()),
                *want, *download(out.v), op == Op::Prod ? 1e-9 : 1e-12);
      }
    if (t == DType::Bool) continue;
    for (Op op : {Op::ArgMax, Op::ArgMin})
      for (int dim : {0, 2, -1}) {
        Shape os;
        if (dim >= 0)
          for (int d = 0; d < 3; ++d)
            if (d != dim) os.push_back(xp.shape[d]);
        auto want = Value::alloc(DType::I64, os);
        cpu::run_argreduce(op, xp, dim, want->view());
        Dev out = upload(want->view());
        cuda::run_argreduce(op, dxp, dim, out.v);
        compare(std::string(op_def(op).name) + " " + std::string(dtype_name(t)), *want, *download(out.v), 0);
      }
  }
}

void check_matmul() {
  for (DType t : kAll) {
    auto a = sample(t, {3, 33, 47}, 4), b = sample(t, {1, 65, 47}, 5);
    const View av = a->view(), bv = b->view().permuted({0, 2, 1}).expanded({3, 47, 65});  // b^T, broadcast
    auto want = Value::alloc(t, {3, 33, 65});
    cpu::run_matmul(av, bv, want->view());
    Dev da = upload(av), db = upload(b->view()), out = upload(want->view());
    cuda::DView dbv = like(db.v, bv);
    cuda::run_matmul(da.v, dbv, out.v);
    compare("matmul " + std::string(dtype_name(t)), *want, *download(out.v), 1e-4);
  }
}

void check_generate() {
  for (DType t : kAll)
    for (Op op : {Op::Full, Op::Arange, Op::Linspace, Op::Eye, Op::Rand, Op::Randn}) {
      if ((op == Op::Rand || op == Op::Randn) && !is_float(t)) continue;
      const Attrs at = op == Op::Full       ? FullAttrs{t, -1.5, 42}.encode()
                       : op == Op::Arange   ? ArangeAttrs{t, -1.5, 0.25, 42, 3}.encode()
                       : op == Op::Linspace ? LinspaceAttrs{t, -1.5, 0.25}.encode()
                       : op == Op::Eye      ? EyeAttrs{t}.encode()
                                            : RandAttrs{t, 42}.encode();
      const bool one_d = op == Op::Arange || op == Op::Linspace;
      const Shape g = one_d ? Shape{1000} : Shape{40, 50};
      const std::vector<int64_t> org = one_d ? std::vector<int64_t>{101} : std::vector<int64_t>{7, 3};
      const Shape box = one_d ? Shape{777} : Shape{21, 33};
      auto want = Value::alloc(t, box);
      cpu::run_generate(op, at, g, org, want->view());
      Dev out = upload(want->view());
      cuda::run_generate(op, at, g, org, out.v);
      compare(std::string("generate ") + std::string(op_def(op).name) + " " + std::string(dtype_name(t)),
              *want, *download(out.v), op == Op::Randn ? 1e-12 : 0);
    }
}

void check_window() {
  for (DType t : {DType::I32, DType::I64, DType::F32, DType::F64}) {
    auto x = sample(t, {2, 6, 17, 19}, 6), k = sample(t, {1, 1, 3, 5}, 7);
    auto want = Value::alloc(t, {2, 6, 17, 19});
    cpu::run_correlate(x->view(), k->view(), {0, 0, -1, -2}, want->view());
    Dev dx = upload(x->view()), dk = upload(k->view()), out = upload(want->view());
    cuda::run_correlate(dx.v, dk.v, {0, 0, -1, -2}, out.v);
    compare("correlate " + std::string(dtype_name(t)), *want, *download(out.v), 0);
    // conv2d with 2 groups of 3 input channels, stride 2, padding 1, dilation 1
    auto w = sample(t, {4, 3, 3, 3}, 8);
    const cpu::WindowAxis h{2, 1, -1}, wd{2, 1, -1};
    auto cw = Value::alloc(t, {2, 4, 9, 10});
    cpu::run_conv2d(x->view(), w->view(), h, wd, 2, 0, cw->view());
    Dev dw = upload(w->view()), cout = upload(cw->view());
    cuda::run_conv2d(dx.v, dw.v, h, wd, 2, 0, cout.v);
    compare("conv2d " + std::string(dtype_name(t)), *cw, *download(cout.v), 1e-5);
    for (Op op : {Op::MaxPool2d, Op::AvgPool2d}) {
      if (op == Op::AvgPool2d && !is_float(t)) continue;
      auto pw = Value::alloc(t, {2, 6, 9, 10});
      cpu::run_pool2d(op, x->view(), 3, 3, h, wd, pw->view());
      Dev pout = upload(pw->view());
      cuda::run_pool2d(op, dx.v, 3, 3, h, wd, pout.v);
      compare(std::string(op_def(op).name) + " " + std::string(dtype_name(t)), *pw, *download(pout.v), 1e-12);
    }
  }
}

void check_copy() {
  for (DType t : kAll) {
    auto x = sample(t, {8, 9, 10}, 9);
    const View s = x->view().sliced({1, 0, 2}, {2, 3, 1}, {3, 3, 7});
    auto want = Value::alloc(t, s.shape);
    cpu::copy_view(s, want->view());
    Dev dx = upload(x->view());
    cuda::DView ds = like(dx.v, s);
    ds.data = static_cast<char*>(dx.v.data) + s.offset * dtype_size(t);
    auto got = download(ds);  // pack on the device, one transfer
    compare("copy/pack " + std::string(dtype_name(t)), *want, *got, 0);
  }
}

// Gather, scatter and scatter_add: the same order as the CPU, so exact; repeats included.
void check_index() {
  auto index = Value::alloc(DType::I64, {6, 5, 4});  // values 1..9 or -9..-1 along a dim of 9
  for (int64_t i = 0; i < 120; ++i) index->data<int64_t>()[i] = (i * 7) % 9 + 1 - (i % 5 == 0 ? 10 : 0);
  for (DType t : kAll) {
    auto x = sample(t, {9, 5, 4}, 10);
    auto src = sample(t, {6, 5, 4}, 11);
    Dev dx = upload(x->view()), di = upload(index->view()), ds = upload(src->view());
    for (Op op : {Op::Gather, Op::Scatter, Op::ScatterAdd}) {
      if (op == Op::ScatterAdd && t == DType::Bool) continue;
      const Attrs a = IndexAttrs{0, IndexFn::Gather}.encode();
      const Shape os = op == Op::Gather ? index->view().shape : x->view().shape;
      auto want = Value::alloc(t, os);
      cpu::run_index(op, a, {x->view(), index->view(), src->view()}, want->view());
      cuda::DeviceBuffer ob(want->view().numel() * dtype_size(t));
      const cuda::DView dout = cuda::dview(ob.get(), t, os);
      cuda::run_index(op, a, {dx.v, di.v, ds.v}, dout);
      compare(std::string(op_def(op).name) + " " + std::string(dtype_name(t)), *want, *download(dout), 0);
    }
  }
  // Gather and scatter move any element width, f16/bf16/c64/c128 included; scatter_add adds
  // complex numbers in the CPU's order. Compared bit for bit.
  for (DType t : {DType::F16, DType::BF16, DType::C64, DType::C128}) {
    auto cast_of = [&](const Value& f) {
      auto v = Value::alloc(t, f.view().shape);
      cpu::MapProgram cast{{f.view()}, {{Op::Cast, t, DType::F32, 0}}};
      cpu::run_map(cast, v->view());
      return v;
    };
    auto x = cast_of(*sample(DType::F32, {9, 5, 4}, 12)), src = cast_of(*sample(DType::F32, {6, 5, 4}, 13));
    Dev dx = upload(x->view()), di = upload(index->view()), ds = upload(src->view());
    for (Op op : {Op::Gather, Op::Scatter, Op::ScatterAdd}) {
      if (op == Op::ScatterAdd && !is_complex(t)) continue;  // f16/bf16 add in f32 (the builders cast)
      const Attrs a = IndexAttrs{0, IndexFn::Gather}.encode();
      const Shape os = op == Op::Gather ? index->view().shape : x->view().shape;
      auto want = Value::alloc(t, os);
      cpu::run_index(op, a, {x->view(), index->view(), src->view()}, want->view());
      cuda::DeviceBuffer ob(want->view().numel() * dtype_size(t));
      const cuda::DView dout = cuda::dview(ob.get(), t, os);
      cuda::run_index(op, a, {dx.v, di.v, ds.v}, dout);
      auto got = download(dout);
      ++checks;
      if (std::memcmp(want->view().byte_ptr(), got->view().byte_ptr(),
                      want->view().numel() * dtype_size(t)) != 0) {
        std::fprintf(stderr, "MISMATCH %s %s: bytes differ\n", std::string(op_def(op).name).c_str(),
                     std::string(dtype_name(t)).c_str());
        ++failures;
      }
    }
  }
  // nonzero: the 1-based row-major positions of a strided mask's true elements, at several
  // densities (none, sparse, most, all) and a mask long enough for a multi-block scan.
  for (int64_t n : {int64_t(120), int64_t(3) << 18})
    for (int density : {0, 1, 50, 100}) {
      auto packed = Value::alloc(DType::Bool, {n / 6, 6});
      for (int64_t i = 0; i < n; ++i) packed->data<bool>()[i] = (i * 7919) % 100 < density;
      const View mask = packed->view().permuted({1, 0});  // strided
      int64_t count = 0;
      for (int64_t i = 0; i < n; ++i) count += packed->data<bool>()[i];
      if (count == 0) continue;  // an empty result never reaches a kernel
      auto want = Value::alloc(DType::I64, {count});
      cpu::run_index(Op::Nonzero, Attrs{}, {mask}, want->view());
      Dev dm = upload(packed->view());
      cuda::DeviceBuffer ob(count * 8);
      const cuda::DView dout = cuda::dview(ob.get(), DType::I64, {count});
      cuda::run_index(Op::Nonzero, Attrs{}, {like(dm.v, mask)}, dout);
      compare("nonzero " + std::to_string(n) + " at " + std::to_string(density) + "%", *want, *download(dout),
              0);
    }
}

// cuFFT against FFTW: c2c both ways, r2c, c2r (both parities), along every dim of a strided view.
void check_fft() {
  for (DType ct : {DType::C64, DType::C128}) {
    const DType rt = ct == DType::C64 ? DType::F32 : DType::F64;
    const double tol = ct == DType::C64 ? 1e-4 : 1e-10;
    for (int dim = 0; dim < 3; ++dim) {
      for (int kind = 0; kind < 4; ++kind) {  // c2c forward, c2c inverse, r2c, c2r
        const DType it = kind == 2 ? rt : ct, ot = kind == 3 ? rt : ct;
        auto packed = Value::alloc(it, {6, 5, 4});
        const int64_t m = 120 * (is_complex(it) ? 2 : 1);
        for (int64_t i = 0; i < m; ++i) {
          const double v = std::sin(0.37 * double(i + kind)) + double((i * 7) % 5);
          if (rt == DType::F32) reinterpret_cast<float*>(packed->view().byte_ptr())[i] = float(v);
          else reinterpret_cast<double*>(packed->view().byte_ptr())[i] = v;
        }
        const View x = packed->view().permuted({2, 0, 1});  // {4, 6, 5}, strided
        Shape os = x.shape;
        if (kind == 2) os[dim] = x.shape[dim] / 2 + 1;
        if (kind == 3) os[dim] = 2 * (x.shape[dim] - 1) + dim % 2;
        auto want = Value::alloc(ot, os);
        cpu::run_fft(x, want->view(), dim, kind == 1 || kind == 3);
        Dev dx = upload(packed->view());
        const cuda::DView dxp = like(dx.v, x);
        cuda::DeviceBuffer ob(numel(os) * dtype_size(ot));
        const cuda::DView dout = cuda::dview(ob.get(), ot, os);
        const std::string what = "fft kind " + std::to_string(kind) + " dim " + std::to_string(dim) + " " +
                                 std::string(dtype_name(ct));
        try {
          cuda::run_fft(dxp, dout, dim, kind == 1 || kind == 3);
        } catch (const std::exception& e) {  // each case reports, the others still run
          std::fprintf(stderr, "MISMATCH %s: %s\n", what.c_str(), e.what());
          ++checks;
          ++failures;
          continue;
        }
        compare_floats(what, *want, *download(dout), tol);
      }
    }
  }
}

// cuSOLVER against LAPACK: solve, cholesky, det, slogdet, eigh's eigenvalues and the singular
// values on a batch of symmetric positive definite matrices; then the singular values of a
// wide and a tall matrix (factored as the transpose or as they are), and QR up to signs.
void check_linalg() {
  for (DType t : {DType::F32, DType::F64}) {
    const double tol = t == DType::F32 ? 1e-4 : 1e-10;
    const int64_t B = 3, n = 7;
    auto a = Value::alloc(t, {B, n, n});
    auto rhs = sample(t, {B, n, 2}, 5);
    dispatch_dtype(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        for (int64_t b = 0; b < B; ++b)
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j)
              a->template data<T>()[(b * n + i) * n + j] =
                  T(i == j ? n + b : 0) + T(1) / T(1 + i + j + b);  // a Hilbert-like SPD matrix
      }
    });
    Dev da = upload(a->view()), dr = upload(rhs->view());
    struct Case {
      Op op;
      int64_t mode;
      Shape out;
    };
    for (const Case& c :
         {Case{Op::Solve, 0, {B, n, 2}}, Case{Op::Cholesky, 0, {B, n, n}}, Case{Op::Det, 0, {B, 1}},
          Case{Op::Slogdet, 0, {B, 2}}, Case{Op::Eigh, 0, {B, n}}, Case{Op::Svd, 0, {B, n}}}) {
      const Attrs attrs = c.op == Op::Eigh || c.op == Op::Svd ? LinalgAttrs{c.mode}.encode() : Attrs{};
      auto want = Value::alloc(t, c.out);
      std::vector<View> in{a->view()};
      std::vector<cuda::DView> din{da.v};
      if (c.op == Op::Solve) in.push_back(rhs->view()), din.push_back(dr.v);
      cpu::run_linalg(c.op, attrs, in, want->view());
      cuda::DeviceBuffer ob(numel(c.out) * dtype_size(t));
      const cuda::DView dout = cuda::dview(ob.get(), t, c.out);
      cuda::run_linalg(c.op, attrs, din, dout);
      compare_floats(std::string(op_def(c.op).name) + " " + std::string(dtype_name(t)), *want,
                     *download(dout), tol);
    }
    for (const Shape& s : {Shape{2, 3, 5}, Shape{2, 5, 3}}) {  // wide, tall
      auto w = sample(t, s, 9);
      Dev dw = upload(w->view());
      for (Op op : {Op::Svd, Op::Qr}) {
        const int64_t k = std::min(s[1], s[2]);
        const Shape os = op == Op::Svd ? Shape{2, k} : Shape{2, s[1] * k + k * s[2]};  // s; reduced Q, R
        const Attrs attrs = LinalgAttrs{0}.encode();
        auto want = Value::alloc(t, os);
        cpu::run_linalg(op, attrs, {w->view()}, want->view());
        cuda::DeviceBuffer ob(numel(os) * dtype_size(t));
        const cuda::DView dout = cuda::dview(ob.get(), t, os);
        cuda::run_linalg(op, attrs, {dw.v}, dout);
        auto got = download(dout);
        if (op == Op::Qr) {  // Householder signs may differ: compare |Q| and |R|
          dispatch_dtype(t, [&](auto tag) {
            using T = typename decltype(tag)::type;
            for (int64_t i = 0; i < numel(os); ++i) {
              want->template data<T>()[i] = std::abs(want->template data<T>()[i]);
              got->template data<T>()[i] = std::abs(got->template data<T>()[i]);
            }
          });
        }
        compare_floats(std::string(op_def(op).name) + " " + shape_str(s) + " " + std::string(dtype_name(t)),
                       *want, *got, tol);
      }
    }
  }
}

}  // namespace

int main() {
  if (cuda::cuda_device_count() == 0) {
    std::printf("SKIP: gpu.consistency needs a CUDA device: %s\n", cuda::cuda_unavailable_reason().c_str());
    return 77;
  }
  // Every family runs even when one throws: a first contact should report all it finds.
  const std::pair<const char*, void (*)()> families[] = {
      {"map", check_map},           {"reduce", check_reduce},  {"matmul", check_matmul},
      {"generate", check_generate}, {"window", check_window},  {"copy", check_copy},
      {"index", check_index},       {"fft", check_fft},        {"linalg", check_linalg},
      {"line", check_line},         {"complex", check_complex}};
  for (const auto& [name, check] : families) {
    try {
      check();
      cuda::synchronize();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpu.consistency: %s: %s\n", name, e.what());
      ++failures;
    }
  }
  std::printf("gpu.consistency: %d of %d comparisons agree\n", checks - failures, checks);
  return failures ? 1 : 0;
}
