// Test helpers for the CPU kernels: values from vectors, vectors from views.
//   auto v = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
//   std::vector<float> x = values<float>(v->view().permuted({1, 0}));   // row-major order
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "engine/ir/value.hpp"
#include "kernels/cpu/kernels.hpp"
#include "kernels/cpu/strided.hpp"

namespace tapestry::test {

template <class T> std::shared_ptr<Value> tensor(const Shape& s, const std::vector<T>& data) {
  auto v = Value::alloc(cpu::dtype_of<T>(), s);
  for (size_t i = 0; i < data.size(); ++i) v->template data<T>()[i] = data[i];  // vector<bool> too
  return v;
}

// The elements of a view in row-major order (vector<bool> avoided: a plain array).
template <class T> struct Elems {
  std::unique_ptr<T[]> p;
  int64_t n = 0;
  T operator[](int64_t i) const { return p[i]; }
  int64_t size() const { return n; }
};
template <class T> Elems<T> values(const View& v) {
  auto c = Value::alloc(v.dtype, v.shape);
  cpu::copy_view(v, c->view());
  Elems<T> e{std::unique_ptr<T[]>(new T[v.numel()]), v.numel()};
  std::memcpy(e.p.get(), c->data<T>(), v.numel() * sizeof(T));
  return e;
}

// Equal, NaN equal to NaN, within a relative tolerance (absolute near zero).
template <class T> bool close(T got, T want, double rtol = 0) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
    if (got == want) return true;
    if (std::isinf(got) || std::isinf(want)) return false;
    double tiny = double(std::numeric_limits<T>::min());
    return std::abs(double(got) - double(want)) <= rtol * std::max(std::abs(double(want)), tiny);
  } else {
    return got == want;
  }
}

// Runs f(name) once with each instruction set's kernels this machine runs (AVX2, and AVX-512
// where it has it), then goes back to the one in use before.
template <class F> void for_each_isa(F&& f) {
  const cpu::Isa was = cpu::isa();
  for (cpu::Isa i : {cpu::Isa::Base, cpu::Isa::Avx512}) {
    if (!cpu::set_isa(i)) continue;
    try {
      f(cpu::isa_name(i));
    } catch (...) {
      cpu::set_isa(was);
      throw;
    }
  }
  cpu::set_isa(was);
}

// A one-instruction program over contiguous leaves.
inline cpu::MapProgram single(Op op, DType out, DType in, std::vector<View> leaves) {
  cpu::MapProgram p;
  int n = static_cast<int>(leaves.size());
  p.leaves = std::move(leaves);
  MapInstr ins{op, out, in};
  ins.a = 0;
  ins.b = n > 1 ? 1 : -1;
  ins.c = n > 2 ? 2 : -1;
  p.instrs = {ins};
  return p;
}

}  // namespace tapestry::test
