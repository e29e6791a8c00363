// gpu.consistency's complex family: c64/c128 sums and products (reduce.cu, in c128 as the CPU)
// over several dim sets of a strided input, and batched, broadcast, transposed matmul (cuBLAS
// cgemm3m/zgemm against the CPU's BLAS cgemm/zgemm). Compared component by component to a
// fraction of the largest magnitude: sums in another order (1e-6 c64, 1e-12 c128), products
// of factors near 1, matmul 1e-4 (c64: Gauss's 3-multiplication gemm rounds differently); and
// constants (Full) of f16, bf16, c64 and c128, bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/ir/attrs.hpp"
#include "kernels/cpu/kernels.hpp"
#include "tests/gpu/consistency.hpp"

namespace tapestry::gpucheck {
namespace {

// Deterministic complex values; near 1 in magnitude for products, so they neither overflow nor vanish.
std::shared_ptr<Value> complex_sample(DType t, const Shape& s, int seed, bool product) {
  auto v = Value::alloc(t, s);
  const int64_t n = v->view().numel();
  for (int64_t i = 0; i < n; ++i) {
    const double a = std::sin(0.37 * double(i + seed)), b = std::cos(0.11 * double(i * 3 + seed));
    const double re = product ? 1 + a / 64 : a + double((i * 7 + seed) % 5) / 4;
    const double im = product ? b / 64 : b - double((i * 3 + seed) % 7) / 8;
    if (t == DType::C64) v->data<c64>()[i] = c64(float(re), float(im));
    else v->data<c128>()[i] = c128(re, im);
  }
  return v;
}

void check_complex_reduce(DType t) {
  for (Op op : {Op::Sum, Op::Prod}) {
    auto x = complex_sample(t, {40, 6, 300}, 3, op == Op::Prod);
    const View xp = x->view().permuted({2, 0, 1});  // {300, 40, 6}, strided
    Dev dx = upload(x->view());
    const cuda::DView dxp = like(dx.v, xp);
    for (const std::vector<int>& dims : std::vector<std::vector<int>>{{0}, {1}, {2}, {0, 2}, {0, 1, 2}}) {
      Shape os;
      for (int d = 0; d < 3; ++d)
        if (std::find(dims.begin(), dims.end(), d) == dims.end()) os.push_back(xp.shape[d]);
      auto want = Value::alloc(t, os);
      cpu::run_reduce(op, xp, dims, want->view());
      cuda::DeviceBuffer ob(std::max<int64_t>(1, numel(os)) * dtype_size(t));
      const cuda::DView dout = cuda::dview(ob.get(), t, os);
      cuda::run_reduce(op, dxp, dims, dout);
      compare_floats(std::string("reduce ") + std::string(op_def(op).name) + " " +
                         std::string(dtype_name(t)) + " dims " + std::to_string(dims.size()),
                     *want, *download(dout), t == DType::C64 ? 1e-6 : 1e-12);
    }
  }
  // A whole-tensor sum long enough for the split (chunked) launch.
  auto big = complex_sample(t, {1 << 20}, 5, false);
  auto want = Value::alloc(t, {});
  cpu::run_reduce(Op::Sum, big->view(), {0}, want->view());
  Dev db = upload(big->view());
  cuda::DeviceBuffer ob(dtype_size(t));
  const cuda::DView dout = cuda::dview(ob.get(), t, {});
  cuda::run_reduce(Op::Sum, db.v, {0}, dout);
  compare_floats("reduce sum 2^20 " + std::string(dtype_name(t)), *want, *download(dout),
                 t == DType::C64 ? 1e-6 : 1e-12);
}

void check_complex_matmul(DType t) {
  auto a = complex_sample(t, {3, 33, 47}, 4, false), b = complex_sample(t, {1, 65, 47}, 5, false);
  const View av = a->view(), bv = b->view().permuted({0, 2, 1}).expanded({3, 47, 65});  // b^T, broadcast
  auto want = Value::alloc(t, {3, 33, 65});
  cpu::run_matmul(av, bv, want->view());
  Dev da = upload(av), db = upload(b->view()), out = upload(want->view());
  cuda::run_matmul(da.v, like(db.v, bv), out.v);
  compare_floats("matmul " + std::string(dtype_name(t)), *want, *download(out.v), 1e-4);
  // A strided slice (neither row- nor column-major): packed first.
  auto c = complex_sample(t, {2, 20, 30}, 6, false);
  View cs = c->view();
  cs.shape = {2, 20, 15};
  cs.strides = {600, 30, 2};  // every other column
  auto d = complex_sample(t, {2, 15, 9}, 7, false);
  auto want2 = Value::alloc(t, {2, 20, 9});
  cpu::run_matmul(cs, d->view(), want2->view());
  Dev dc = upload(c->view()), dd = upload(d->view()), out2 = upload(want2->view());
  cuda::run_matmul(like(dc.v, cs), dd.v, out2.v);
  compare_floats("matmul strided " + std::string(dtype_name(t)), *want2, *download(out2.v), 1e-4);
}

// A constant of f16, bf16, c64 or c128 on a box of a larger tensor, bit for bit (a value that
// rounds in f16 and bf16).
void check_full(DType t) {
  const Attrs a = FullAttrs{t, 1.0 / 3.0, 0}.encode();
  auto want = Value::alloc(t, {5, 7});
  cpu::run_generate(Op::Full, a, {9, 11}, {2, 3}, want->view());
  cuda::DeviceBuffer ob(want->view().numel() * dtype_size(t));
  const cuda::DView dout = cuda::dview(ob.get(), t, {5, 7});
  cuda::run_generate(Op::Full, a, {9, 11}, {2, 3}, dout);
  auto got = download(dout);
  ++checks;
  if (std::memcmp(want->view().byte_ptr(), got->view().byte_ptr(), 35 * dtype_size(t)) != 0) {
    std::fprintf(stderr, "MISMATCH full %s: bytes differ\n", std::string(dtype_name(t)).c_str());
    ++failures;
  }
}

}  // namespace

void check_complex() {
  for (DType t : {DType::C64, DType::C128}) {
    check_complex_reduce(t);
    check_complex_matmul(t);
  }
  for (DType t : {DType::F16, DType::BF16, DType::C64, DType::C128}) check_full(t);
}

}  // namespace tapestry::gpucheck
