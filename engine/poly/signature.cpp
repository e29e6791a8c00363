#include "engine/poly/signature.hpp"

#include "engine/ir/error.hpp"

namespace tapestry::poly {

std::string_view combine_name(CombineKind c) {
  if (const std::optional<Monoid> m = monoid_of(c)) return monoid_name(*m);
  return c == CombineKind::None ? "none" : c == CombineKind::ArgMax ? "argmax" : "argmin";
}

double Access::bytes() const { return static_cast<double>(numel(shape)) * dtype_size(dtype); }

Box Signature::space_box() const { return Box::of_shape(extents()); }

Shape Signature::extents() const {
  Shape e;
  for (const IndexDim& d : space) e.push_back(d.extent);
  return e;
}

std::vector<std::string> Signature::dim_names() const {
  std::vector<std::string> n;
  for (const IndexDim& d : space) n.push_back(d.name);
  return n;
}

Box Signature::input_slice(size_t i, const Box& block) const {
  internal_check(i < inputs.size());
  return inputs[i].proj.slice(block, inputs[i].shape);
}

Box Signature::output_slice(const Box& block) const { return output.proj.slice(block, output.shape); }

CombineKind Signature::combine() const {
  for (const IndexDim& d : space)
    if (d.kind == IndexDim::Reduction) return d.combine;
  return CombineKind::None;
}

bool Signature::splits_reduction(const Box& block) const {
  internal_check(block.rank() == rank());
  for (int j = 0; j < rank(); ++j)
    if (space[j].kind == IndexDim::Reduction && block.extent(j) != space[j].extent) return true;
  return false;
}

namespace {

std::string access_problem(const Signature& s, const Access& a, const std::string& what, bool must_be_full) {
  const Projection& p = a.proj;
  if (p.space_rank != s.rank())
    return cat_str(what, ": projection has ", p.space_rank, " index dims, space has ", s.rank());
  const int tr = p.tensor_rank();
  if (tr != static_cast<int>(a.shape.size()))
    return cat_str(what, ": projection has ", tr, " tensor dims, shape is ", shape_str(a.shape));
  if (static_cast<int>(p.b.size()) != tr || static_cast<int>(p.w.size()) != tr)
    return cat_str(what, ": offsets or windows have the wrong length");
  for (int t = 0; t < tr; ++t) {
    if (static_cast<int>(p.A[t].size()) != s.rank())
      return cat_str(what, ": row ", t, " of A has the wrong length");
    if (p.w[t] < 1) return cat_str(what, ": window ", p.w[t], " in tensor dim ", t);
  }
  const Box full = Box::of_shape(a.shape);
  const Box img = p.slice(s.space_box(), a.shape);
  if (must_be_full ? !(img == full) : !full.contains(img))
    return cat_str(what, ": the whole space reaches ", to_string(img), ", tensor is ", to_string(full));
  return "";
}

}  // namespace

std::string signature_problem(const Signature& s) {
  for (int j = 0; j < s.rank(); ++j) {
    const IndexDim& d = s.space[j];
    if (d.extent < 1) return cat_str("index dim ", d.name, " has extent ", d.extent);
    if ((d.kind == IndexDim::Reduction) != (d.combine != CombineKind::None))
      return cat_str(
          "index dim ", d.name, " is ",
          d.kind == IndexDim::Reduction ? "a reduction without a combine" : "parallel but has a combine");
    if (d.kind == IndexDim::Reduction && d.combine != s.combine())
      return cat_str("reduction dims disagree on the combine (", d.name, ")");
  }
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    std::string p = access_problem(s, s.inputs[i], cat_str("input ", i), false);
    if (!p.empty()) return p;
  }
  // Each output element is produced by some index point: a gap would be a value no block writes.
  return access_problem(s, s.output, "output", true);
}

std::string to_string(const Signature& s) {
  std::string out = "space {";
  for (int j = 0; j < s.rank(); ++j) {
    const IndexDim& d = s.space[j];
    if (j) out += ", ";
    out += cat_str(d.name, ":", d.extent);
    if (d.kind == IndexDim::Reduction) out += cat_str(" ", combine_name(d.combine));
    if (!d.splittable) out += " whole";
  }
  out += "}";
  const std::vector<std::string> names = s.dim_names();
  for (size_t i = 0; i < s.inputs.size(); ++i)
    out += cat_str("; in", i + 1, " ", to_string(s.inputs[i].proj, names));
  out += cat_str("; out ", to_string(s.output.proj, names));
  out += cat_str("; ", s.flops_per_point, " flops/point");
  return out;
}

}  // namespace tapestry::poly
