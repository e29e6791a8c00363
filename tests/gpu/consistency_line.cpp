// gpu.consistency's line family: line.cu against cpu::run_line on the same inputs. Exact but for
// logcumsumexp: the samples are multiples of 1/16 small enough that every partial sum is exact
// in f32 and products are of +-1, 2 and 1/2, so a chunked scan (carries joined in another order)
// must give the CPU's bits; sorts, indices and searchsorted are exact by construction.
// Shapes: a strided block along each dim (one chunk a line: the CPU's order), and 2^17-long
// lines (many chunks a line; one line is cub's device-wide sort, three are the segmented one).
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "engine/ir/attrs.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/scan.hpp"
#include "tests/gpu/consistency.hpp"

namespace tapestry::gpucheck {
namespace {

const DType kLineTypes[] = {DType::Bool, DType::I8,  DType::U8, DType::I32,
                            DType::I64,  DType::F32, DType::F64};

// sample()'s values, with NaN and -0 among floats; for products, +-1, 2 and 1/2.
std::shared_ptr<Value> line_sample(DType t, const Shape& s, int seed, bool product) {
  auto v = sample(t == DType::I8 || t == DType::U8 ? DType::I32 : t, s, seed);
  auto out = Value::alloc(t, s);
  cpu::MapProgram cast{{v->view()}, {{Op::Cast, t, v->view().dtype, 0}}};
  cpu::run_map(cast, out->view());
  dispatch_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out->template data<T>();
    for (int64_t i = 0; i < out->view().numel(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (product)
          p[i] = (i * 13 + seed) % 5 == 0 ? T(2) : (i * 13 + seed) % 5 == 1 ? T(0.5) : (i % 3 ? T(1) : T(-1));
        else if (i % 97 == 5) p[i] = std::numeric_limits<T>::quiet_NaN();
        else if (i % 89 == 7) p[i] = -T(0);
      } else if constexpr (!std::is_same_v<T, bool>) {
        if (product) p[i] = (i * 13 + seed) % 7 == 0 ? T(3) : (i % 3 ? T(1) : T(-1));
      }
    }
  });
  return out;
}

struct Case {
  std::string name;
  std::shared_ptr<Value> packed;  // the host value
  View view;                      // the view of it the kernels read
};

void run_case(const Case& c, Op op, int dim, LineAttrs a, DType out_t, const Shape& out_shape,
              const std::vector<View>& more, double rtol) {
  a.dim = dim;
  auto want = Value::alloc(out_t, out_shape);
  std::vector<View> in{c.view};
  for (const View& m : more) in.push_back(m);
  cpu::run_line(op, a.encode(), in, want->view());
  Dev dx = upload(c.packed->view());
  std::vector<Dev> keep;
  std::vector<cuda::DView> din{like(dx.v, c.view)};
  for (const View& m : more) {
    keep.push_back(upload(m));
    din.push_back(keep.back().v);
  }
  cuda::DeviceBuffer ob(std::max<int64_t>(1, want->view().numel()) * dtype_size(out_t));
  const cuda::DView dout = cuda::dview(ob.get(), out_t, out_shape);
  std::string what = std::string(op_def(op).name) + (a.indices ? " indices" : "") +
                     (a.reverse ? " reverse" : "") + " " + c.name + " dim " + std::to_string(dim);
  if (out_shape != c.view.shape && op == Op::Sort) what += " k " + std::to_string(out_shape[dim]);
  try {
    cuda::run_line(op, a.encode(), din, dout);
  } catch (const std::exception& e) {  // each case reports, the others still run
    std::fprintf(stderr, "MISMATCH %s: %s\n", what.c_str(), e.what());
    ++checks;
    ++failures;
    return;
  }
  compare(what, *want, *download(dout), rtol);
}

void check_type(DType t, const Shape& packed_shape, const std::vector<int>& perm, const std::string& name) {
  for (bool product : {false, true}) {
    auto x = line_sample(t, packed_shape, 21, product);
    const Case c{name + " " + std::string(dtype_name(t)), x, x->view().permuted(perm)};
    const Shape& s = c.view.shape;
    const bool is_f = is_float(t);
    for (int dim = 0; dim < static_cast<int>(s.size()); ++dim) {
      if (s[dim] == 1) continue;
      for (bool reverse : {false, true}) {
        const LineAttrs r{0, reverse, false, false};
        if (product) {
          if (t != DType::Bool) run_case(c, Op::Cumprod, dim, r, t, s, {}, 0);
          continue;
        }
        if (t != DType::Bool) run_case(c, Op::Cumsum, dim, r, t, s, {}, 0);
        if (is_f) run_case(c, Op::Logcumsumexp, dim, r, t, s, {}, t == DType::F32 ? 1e-5 : 1e-12);
        for (bool indices : {false, true}) {  // sort: reverse is descending
          const LineAttrs si{0, reverse, indices, false};
          run_case(c, Op::Sort, dim, si, indices ? DType::I64 : t, s, {}, 0);
          Shape k = s;
          k[dim] = std::min<int64_t>(7, s[dim]);
          run_case(c, Op::Sort, dim, si, indices ? DType::I64 : t, k, {}, 0);  // topk
          if (!reverse) {
            run_case(c, Op::Cummax, dim, si, indices ? DType::I64 : t, s, {}, 0);
            run_case(c, Op::Cummin, dim, si, indices ? DType::I64 : t, s, {}, 0);
          }
        }
      }
      if (product || t == DType::Bool) continue;
      // line_scatter_add (sort's gradient): x's values as the gradient, the CPU's argsort's indices.
      auto idx = Value::alloc(DType::I64, s);
      cpu::run_line(Op::Sort, LineAttrs{dim, false, true, false}.encode(), {c.view}, idx->view());
      run_case(c, Op::LineScatterAdd, dim, LineAttrs{}, t, s, {idx->view()}, 0);
    }
    if (product) continue;
    // searchsorted into a sorted sequence (with ties and NaN), whole and every other element.
    auto raw = line_sample(t, {257}, 24, false);
    auto sorted = Value::alloc(t, {257});
    cpu::run_line(Op::Sort, LineAttrs{}.encode(), {raw->view()}, sorted->view());
    auto values = line_sample(t, {4, 33}, 23, false);
    for (bool right : {false, true})
      for (int step : {1, 2}) {
        View seq = sorted->view();
        seq.shape = {step == 1 ? 257 : 129};
        seq.strides = {step};
        auto want = Value::alloc(DType::I64, {4, 33});
        cpu::run_line(Op::Searchsorted, LineAttrs{0, false, false, right}.encode(), {seq, values->view()},
                      want->view());
        Dev ds = upload(sorted->view()), dv = upload(values->view());
        cuda::DeviceBuffer ob(want->view().numel() * 8);
        const cuda::DView dout = cuda::dview(ob.get(), DType::I64, {4, 33});
        cuda::DView dseq = ds.v;
        dseq.shape = seq.shape;
        dseq.strides = seq.strides;
        cuda::run_line(Op::Searchsorted, LineAttrs{0, false, false, right}.encode(), {dseq, dv.v}, dout);
        compare("searchsorted " + c.name + (right ? " right" : "") + " step " + std::to_string(step), *want,
                *download(dout), 0);
      }
  }
}

}  // namespace

void check_line() {
  for (DType t : kLineTypes) {
    check_type(t, {300, 6, 5}, {1, 2, 0}, "strided {6, 5, 300}");
    check_type(t, {1, int64_t(1) << 17}, {0, 1}, "one long line");
    check_type(t, {int64_t(1) << 17, 3}, {0, 1}, "three long lines");
  }
}

}  // namespace tapestry::gpucheck
