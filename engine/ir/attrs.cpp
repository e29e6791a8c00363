// The layout of each struct in Attrs. Changing one changes node hashes and plan keys (both
// per process) and what the plan wire carries (bump kPlanWireVersion).
#include "engine/ir/attrs.hpp"

#include <algorithm>

namespace tapestry {

namespace {

Attrs with(DType dtype, std::vector<int64_t> ints, std::vector<double> reals = {}) {
  Attrs a;
  a.dtype = dtype;
  a.ints = std::move(ints);
  a.reals = std::move(reals);
  return a;
}

Attrs with_ints(std::vector<int64_t> ints) { return with(DType::F32, std::move(ints)); }

std::vector<int> to_ints(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }
std::vector<int64_t> to_int64s(const std::vector<int>& v) { return {v.begin(), v.end()}; }

}  // namespace

Attrs SourceAttrs::encode() const { return with_ints({static_cast<int64_t>(id)}); }
SourceAttrs SourceAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() == 1);
  return {static_cast<uint64_t>(a.ints[0])};
}

Attrs FullAttrs::encode() const { return with(dtype, {integer}, {real}); }
FullAttrs FullAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() == 1 && a.reals.size() == 1);
  return {a.dtype, a.reals[0], a.ints[0]};
}

Attrs ArangeAttrs::encode() const { return with(dtype, {int_first, int_step}, {first, step}); }
ArangeAttrs ArangeAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() == 2 && a.reals.size() == 2);
  return {a.dtype, a.reals[0], a.reals[1], a.ints[0], a.ints[1]};
}

Attrs LinspaceAttrs::encode() const { return with(dtype, {}, {first, last}); }
LinspaceAttrs LinspaceAttrs::decode(const Attrs& a) {
  internal_check(a.ints.empty() && a.reals.size() == 2);
  return {a.dtype, a.reals[0], a.reals[1]};
}

Attrs EyeAttrs::encode() const { return with(dtype, {}); }
EyeAttrs EyeAttrs::decode(const Attrs& a) {
  internal_check(a.ints.empty() && a.reals.empty());
  return {a.dtype};
}

Attrs RandAttrs::encode() const { return with(dtype, {static_cast<int64_t>(seed)}); }
RandAttrs RandAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() == 1 && a.reals.empty());
  return {a.dtype, static_cast<uint64_t>(a.ints[0])};
}

Attrs CastAttrs::encode() const { return with(to, {}); }
CastAttrs CastAttrs::decode(const Attrs& a) {
  internal_check(a.ints.empty() && a.reals.empty());
  return {a.dtype};
}

Attrs ReduceAttrs::encode() const { return with_ints(to_int64s(dims)); }
ReduceAttrs ReduceAttrs::decode(const Attrs& a) { return {to_ints(a.ints)}; }

Attrs ArgReduceAttrs::encode() const {
  return with_ints(dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{});
}
ArgReduceAttrs ArgReduceAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() <= 1);
  if (a.ints.empty()) return {};
  return {static_cast<int>(a.ints[0])};
}

Attrs PermuteAttrs::encode() const { return with_ints(to_int64s(perm)); }
PermuteAttrs PermuteAttrs::decode(const Attrs& a) { return {to_ints(a.ints)}; }

// {start_0..start_{r-1}, step_0..step_{r-1}}
Attrs SliceAttrs::encode() const {
  internal_check(starts.size() == steps.size());
  std::vector<int64_t> ints = starts;
  ints.insert(ints.end(), steps.begin(), steps.end());
  return with_ints(std::move(ints));
}
SliceAttrs SliceAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() % 2 == 0);
  const auto mid = a.ints.begin() + static_cast<std::ptrdiff_t>(a.ints.size() / 2);
  return {{a.ints.begin(), mid}, {mid, a.ints.end()}};
}

// The parts, then 1 for a replicated layout or 0.
Attrs ConstrainAttrs::encode() const {
  std::vector<int64_t> ints = parts;
  ints.push_back(replicated ? 1 : 0);
  return with_ints(std::move(ints));
}
std::vector<int64_t> ConstrainAttrs::on(int ranks, const Shape& shape) const {
  std::vector<int64_t> out = parts;
  for (size_t d = 0; d < out.size() && d < shape.size(); ++d)
    if (out[d] == kPartsPerRank) out[d] = std::max<int64_t>(1, std::min<int64_t>(ranks, shape[d]));
  return out;
}

ConstrainAttrs ConstrainAttrs::decode(const Attrs& a) {
  internal_check(!a.ints.empty());
  return {{a.ints.begin(), a.ints.end() - 1}, a.ints.back() != 0};
}

// The number of groups, per group anti (0 or 1), the number of dims and the dims; the number
// of tile dims, the tile extents; the number of dims of the packed-for shape and its sizes;
// and one 0/1 per tile.
Attrs PropertiesAttrs::encode() const {
  std::vector<int64_t> ints{static_cast<int64_t>(groups.size())};
  for (const SymmetryGroup& g : groups) {
    ints.push_back(g.herm ? 2 : g.anti ? 1 : 0);
    ints.push_back(static_cast<int64_t>(g.dims.size()));
    ints.insert(ints.end(), g.dims.begin(), g.dims.end());
  }
  ints.push_back(static_cast<int64_t>(tiles.size()));
  ints.insert(ints.end(), tiles.begin(), tiles.end());
  ints.push_back(static_cast<int64_t>(packed.size()));
  ints.insert(ints.end(), packed.begin(), packed.end());
  for (bool b : nonzero) ints.push_back(b ? 1 : 0);
  return with_ints(std::move(ints));
}
PropertiesAttrs PropertiesAttrs::decode(const Attrs& a) {
  PropertiesAttrs p;
  if (a.ints.empty()) return p;
  size_t i = 1;
  for (int64_t n = 0; n < a.ints[0]; ++n) {
    internal_check(i + 2 <= a.ints.size());
    SymmetryGroup g{a.ints[i] == 1, {}, a.ints[i] == 2};
    const auto k = static_cast<size_t>(a.ints[i + 1]);
    i += 2;
    internal_check(i + k <= a.ints.size());
    for (size_t j = 0; j < k; ++j) g.dims.push_back(static_cast<int>(a.ints[i + j]));
    i += k;
    p.groups.push_back(std::move(g));
  }
  internal_check(i < a.ints.size());
  const auto nt = static_cast<size_t>(a.ints[i++]);
  internal_check(i + nt <= a.ints.size());
  p.tiles.assign(a.ints.begin() + static_cast<std::ptrdiff_t>(i),
                 a.ints.begin() + static_cast<std::ptrdiff_t>(i + nt));
  i += nt;
  internal_check(i < a.ints.size());
  const auto np = static_cast<size_t>(a.ints[i++]);
  internal_check(i + np <= a.ints.size());
  p.packed.assign(a.ints.begin() + static_cast<std::ptrdiff_t>(i),
                  a.ints.begin() + static_cast<std::ptrdiff_t>(i + np));
  for (i += np; i < a.ints.size(); ++i) p.nonzero.push_back(a.ints[i] != 0);
  return p;
}

Attrs CatAttrs::encode() const { return with_ints({dim}); }
CatAttrs CatAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() == 1);
  return {static_cast<int>(a.ints[0])};
}

Attrs WriteAttrs::encode() const { return with_ints(start); }
WriteAttrs WriteAttrs::decode(const Attrs& a) { return {a.ints}; }

// {pad_before per dim, then pad_after per dim}
Attrs CorrelateAttrs::encode() const {
  internal_check(pad_before.size() == pad_after.size());
  std::vector<int64_t> ints = pad_before;
  ints.insert(ints.end(), pad_after.begin(), pad_after.end());
  return with_ints(std::move(ints));
}
CorrelateAttrs CorrelateAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() % 2 == 0);
  const auto mid = a.ints.begin() + static_cast<std::ptrdiff_t>(a.ints.size() / 2);
  return {{a.ints.begin(), mid}, {mid, a.ints.end()}};
}

std::string_view index_fn_name(IndexFn f) {
  switch (f) {
    case IndexFn::Gather: return "tp.gather";
    case IndexFn::Take: return "tp.take";
    case IndexFn::IndexSelect: return "tp.index_select";
    case IndexFn::Subscript: return "x[{...}]";
    case IndexFn::Scatter: return "tp.scatter";
    case IndexFn::ScatterAdd: return "tp.scatter_add";
    case IndexFn::MaskedWrite: return "region write";
  }
  return "?";
}
Attrs IndexAttrs::encode() const { return with_ints({dim, static_cast<int64_t>(fn)}); }
IndexAttrs IndexAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() == 2 && a.ints[1] >= 0 &&
                 a.ints[1] <= static_cast<int64_t>(IndexFn::MaskedWrite));
  return {static_cast<int>(a.ints[0]), static_cast<IndexFn>(a.ints[1])};
}

// {stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups}
Attrs LineAttrs::encode() const { return with_ints({dim, reverse, indices, right}); }
LineAttrs LineAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() == 4);
  return {a.ints[0], a.ints[1] != 0, a.ints[2] != 0, a.ints[3] != 0};
}

Attrs LinalgAttrs::encode() const { return with_ints({mode}); }
LinalgAttrs LinalgAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() == 1);
  return {a.ints[0]};
}

Attrs Conv2dAttrs::encode() const {
  return with_ints({stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1], groups});
}
Conv2dAttrs Conv2dAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() == 7);
  const std::vector<int64_t>& v = a.ints;
  return {{v[0], v[1]}, {v[2], v[3]}, {v[4], v[5]}, v[6]};
}

// {kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w}
Attrs PoolAttrs::encode() const {
  return with_ints({kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1]});
}
PoolAttrs PoolAttrs::decode(const Attrs& a) {
  internal_check(a.ints.size() == 6);
  const std::vector<int64_t>& v = a.ints;
  return {{v[0], v[1]}, {v[2], v[3]}, {v[4], v[5]}};
}

}  // namespace tapestry
