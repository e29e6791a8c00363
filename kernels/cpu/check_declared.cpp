// The check of x:declare{symmetry = ...}: the whole tensor, on one rank, against each group's
// generating transpositions (swapping neighbouring dims of the group generates every
// permutation). Run through run_linalg, since the check reads the tensor whole, as LAPACK does.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/ir/attrs.hpp"
#include "engine/ir/complex.hpp"
#include "engine/ir/half.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry::cpu {
namespace {

struct Elem {
  double re = 0, im = 0;
};

Elem element(const View& v, const std::vector<int64_t>& idx) {
  int64_t off = v.offset;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * v.strides[d];
  const char* p = static_cast<const char*>(v.buf->data()) + off * dtype_size(v.dtype);
  switch (v.dtype) {
    case DType::F32: return {*reinterpret_cast<const float*>(p)};
    case DType::F64: return {*reinterpret_cast<const double*>(p)};
    case DType::F16: return {static_cast<float>(*reinterpret_cast<const f16*>(p))};
    case DType::BF16: return {static_cast<float>(*reinterpret_cast<const bf16*>(p))};
    case DType::C64: {
      const auto* z = reinterpret_cast<const cx<float>*>(p);
      return {z->re, z->im};
    }
    case DType::C128: {
      const auto* z = reinterpret_cast<const cx<double>*>(p);
      return {z->re, z->im};
    }
    case DType::I8: return {static_cast<double>(*reinterpret_cast<const int8_t*>(p))};
    case DType::U8: return {static_cast<double>(*reinterpret_cast<const uint8_t*>(p))};
    case DType::I32: return {static_cast<double>(*reinterpret_cast<const int32_t*>(p))};
    case DType::I64: return {static_cast<double>(*reinterpret_cast<const int64_t*>(p))};
    case DType::Bool: return {*reinterpret_cast<const bool*>(p) ? 1.0 : 0.0};
  }
  internal_check(false && "check_declared: unknown dtype");
  return {};
}

// max |x - x^T| (anti: |x + x^T|, herm: |x - conj(x^T)|) over swapping dims a and b, and max |x|.
void violation(const View& x, const SymmetryGroup& g, int a, int b, double& worst, double& biggest) {
  worst = 0;
  biggest = 0;
  std::vector<int64_t> idx(x.shape.size(), 0), swapped;
  const int64_t n = x.numel();
  const double sign = g.anti ? -1 : 1, conj = g.herm ? -1 : 1;
  for (int64_t e = 0; e < n; ++e) {
    const Elem v = element(x, idx);
    swapped = idx;
    std::swap(swapped[a], swapped[b]);
    const Elem w = element(x, swapped);
    const double diff = std::hypot(v.re - sign * w.re, v.im - sign * conj * w.im);
    // A NaN mirrored by a NaN is kept by the packed form, but not on an antisymmetric
    // diagonal, which must be 0 and may be stored as nothing: there a NaN is a violation.
    const bool nan_diagonal = g.anti && idx[a] == idx[b] && std::isnan(diff);
    if (std::isnan(diff) && ((!std::isnan(v.re) && !std::isnan(v.im)) || nan_diagonal)) worst = diff;
    else worst = std::max(worst, diff);
    biggest = std::max(biggest, std::hypot(v.re, v.im));
    for (int d = x.rank() - 1; d >= 0 && ++idx[d] == x.shape[d]; --d) idx[d] = 0;
  }
}

// The largest |x| outside the nonzero tiles, and the first tile (0-based) where it lies.
double outside_tiles(const View& x, const PropertiesAttrs& p, std::vector<int64_t>& where) {
  std::vector<int64_t> idx(x.shape.size(), 0), grid(x.shape.size());
  for (size_t d = 0; d < grid.size(); ++d) grid[d] = (x.shape[d] + p.tiles[d] - 1) / p.tiles[d];
  double worst = 0;
  const int64_t n = x.numel();
  for (int64_t e = 0; e < n; ++e) {
    int64_t t = 0;
    for (size_t d = 0; d < grid.size(); ++d) t = t * grid[d] + idx[d] / p.tiles[d];
    const Elem z = element(x, idx);
    const double v = std::hypot(z.re, z.im);
    if (!p.nonzero[static_cast<size_t>(t)] && (v > worst || (std::isnan(v) && !std::isnan(worst)))) {
      worst = v;
      where.resize(idx.size());
      for (size_t d = 0; d < idx.size(); ++d) where[d] = idx[d] / p.tiles[d];
    }
    for (int d = x.rank() - 1; d >= 0 && ++idx[d] == x.shape[d]; --d) idx[d] = 0;
  }
  return worst;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

void run_check_declared(const Attrs& attrs, const View& in, const View& out) {
  const PropertiesAttrs p = attrs_of<PropertiesAttrs>(Op::CheckDeclared, attrs);
  // Floats may differ by rounding: 1e-5 of the largest magnitude; integers must agree exactly.
  const bool exact = !is_inexact(in.dtype);
  for (const SymmetryGroup& g : p.groups)
    for (size_t k = 0; k + 1 < g.dims.size(); ++k) {
      double worst = 0, biggest = 0;
      violation(in, g, g.dims[k], g.dims[k + 1], worst, biggest);
      const double tol = exact ? 0 : 1e-5 * std::max(1.0, biggest);
      user_check(!(worst > tol) && !std::isnan(worst), "tp.declare: x is not ",
                 g.herm   ? "Hermitian"
                 : g.anti ? "antisymmetric"
                          : "symmetric",
                 " in dims ", g.dims[k] + 1, ",", g.dims[k + 1] + 1, " (max |x ", g.anti ? "+" : "-",
                 g.herm ? " conj(x^T)" : " x^T", "| = ", fmt(worst), ")");
    }
  if (!p.tiles.empty()) {
    std::vector<int64_t> tile;
    const double worst = outside_tiles(in, p, tile);
    if (worst != 0) {
      std::string t;
      for (size_t d = 0; d < tile.size(); ++d) t += (d ? "," : "") + std::to_string(tile[d] + 1);
      user_check(false, "tp.declare: x is not zero outside its nonzero tiles (tile {", t,
                 "} is declared zero, max |x| there = ", fmt(worst), ")");
    }
  }
  copy_view(in, out);
}

}  // namespace tapestry::cpu
