#include "engine/poly/cost.hpp"

#include <cstdlib>

#include "engine/ir/error.hpp"

namespace tapestry::poly {

namespace {

double slice_bytes(const Access& a, const Box& block) {
  return static_cast<double>(a.proj.slice(block, a.shape).volume()) * dtype_size(a.dtype);
}

// d/de_j of size * prod_t ext_t(e) = size * sum_t |A_tj| * prod_{t' != t} ext_t'.
double marginal_bytes(const Access& a, const Shape& e, int j) {
  const Projection& p = a.proj;
  const int tr = p.tensor_rank();
  std::vector<double> ext(tr);
  for (int t = 0; t < tr; ++t) {
    int64_t x = p.w[t];
    for (int k = 0; k < p.space_rank; ++k) x += std::llabs(p.A[t][k]) * (e[k] - 1);
    ext[t] = static_cast<double>(x);
  }
  double d = 0;
  for (int t = 0; t < tr; ++t) {
    if (p.A[t][j] == 0) continue;
    double rest = static_cast<double>(std::llabs(p.A[t][j]));
    for (int u = 0; u < tr; ++u)
      if (u != t) rest *= ext[u];
    d += rest;
  }
  return d * dtype_size(a.dtype);
}

}  // namespace

double BlockCost::bytes() const {
  double b = output_bytes;
  for (double x : input_bytes) b += x;
  return b;
}

BlockCost block_cost(const Signature& s, const Box& block) {
  internal_check(block.rank() == s.rank());
  BlockCost c;
  c.flops = s.flops_per_point * static_cast<double>(block.volume());
  for (const Access& a : s.inputs) c.input_bytes.push_back(slice_bytes(a, block));
  c.output_bytes = slice_bytes(s.output, block);
  return c;
}

std::vector<Marginal> marginal_costs(const Signature& s) {
  const Shape e = s.extents();
  std::vector<Marginal> out(s.rank());
  for (int j = 0; j < s.rank(); ++j) {
    double others = 1;
    for (int k = 0; k < s.rank(); ++k)
      if (k != j) others *= static_cast<double>(e[k]);
    out[j].flops = s.flops_per_point * others;
    for (const Access& a : s.inputs) out[j].input_bytes.push_back(marginal_bytes(a, e, j));
    out[j].output_bytes = marginal_bytes(s.output, e, j);
  }
  return out;
}

}  // namespace tapestry::poly
