// Maps and full reductions of packed tensors (packed.hpp): computed on the stored tiles only.
#include <algorithm>
#include <cmath>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/packed.hpp"
#include "engine/ir/dtype.hpp"
#include "engine/ir/op.hpp"
#include "engine/ir/properties.hpp"

namespace tapestry::build {
namespace {

// Two packings store the same tiles in the same places (their signs may differ: an even map
// of an antisymmetric tensor is symmetric, stored alike).
bool same_layout(const Packing& a, const Packing& b) {
  if (a.packed_shape() != b.packed_shape() || a.tiles != b.tiles || a.mask != b.mask) return false;
  if (a.groups.size() != b.groups.size()) return false;
  for (size_t m = 0; m < a.groups.size(); ++m)
    if (a.groups[m].dims != b.groups[m].dims || a.groups[m].b != b.groups[m].b ||
        a.groups[m].stored != b.groups[m].stored)
      return false;
  return true;
}

// A constant (a Full, or a broadcast one): its value, as a Full of `shape`.
NodeRef constant_as(const NodeRef& x, const Shape& shape) {
  const NodeRef& c = x->op == Op::Expand ? x->inputs[0] : x;
  if (c->op != Op::Full) return nullptr;
  return make_node(Op::Full, {}, c->attrs, shape, c->dtype);
}

double constant_value(const NodeRef& full) {
  const FullAttrs a = attrs_of<FullAttrs>(*full);
  return is_inexact(a.dtype) ? a.real : static_cast<double>(a.integer);
}

// f maps the zero padding of edge tiles to zero (so a P keeps it).
bool keeps_padding(const NodeRef& r, const std::vector<NodeRef>& constants) {
  switch (r->op) {
    case Op::Cast:
    case Op::Neg:
    case Op::Abs:
    case Op::Sqrt:
    case Op::Sin:
    case Op::Tanh:
    case Op::Relu:
    case Op::Gelu:
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Sign:
    case Op::Square:
    case Op::Conj:
    case Op::Real:
    case Op::Imag: return true;
    default: break;
  }
  if (r->inputs.size() != 2) return false;
  if (constants.empty())
    return r->op == Op::Add || r->op == Op::Sub || r->op == Op::Mul || r->op == Op::Maximum ||
           r->op == Op::Minimum;
  const double c = constant_value(constants[0]);
  const bool c_second = r->inputs[1]->op == Op::Full || r->inputs[1]->op == Op::Expand;
  if (r->op == Op::Mul) return std::isfinite(c);
  if (r->op == Op::Div) return c_second && std::isfinite(c) && c != 0;
  return (r->op == Op::Add || r->op == Op::Sub) && c == 0;
}

}  // namespace

NodeRef packed_map(NodeRef r) {
  if (op_kind(r->op) != OpKind::Map || r->inputs.empty()) return r;
  // Only a Declare input can be packed (unpacked()): most maps have none.
  if (std::none_of(r->inputs.begin(), r->inputs.end(),
                   [](const NodeRef& in) { return in->op == Op::Declare; }))
    return r;
  std::optional<Unpacked> first;
  for (const NodeRef& in : r->inputs)
    if ((first = unpacked(in))) break;
  if (!first) return r;
  const Shape ps = first->p->shape;
  std::vector<NodeRef> ins, constants;
  for (const NodeRef& in : r->inputs) {
    if (std::optional<Unpacked> u = unpacked(in)) {
      if (!same_layout(u->pk, first->pk)) return r;
      ins.push_back(u->p);
    } else if (NodeRef c = constant_as(in, ps)) {
      ins.push_back(c);
      constants.push_back(c);
    } else if (r->op == Op::Mul && r->inputs.size() == 2 && !first->pk.tiles.empty() &&
               in->shape == r->shape && in->dtype == first->p->dtype) {
      ins.push_back(pack(in, first->pk));  // a dense factor: its tiles where x has some
    } else {
      return r;  // a dense operand: the result has no structure to store (docs/properties.md)
    }
  }
  const NodeRef fp = make_node(r->op, ins, r->attrs, ps, r->dtype);
  const Properties p = properties_of(r);
  if (p.uniform || p.zero) return r;
  const std::optional<Packing> kept = packing_of(r->shape, p.declared());
  if (!kept || !same_layout(*kept, first->pk)) {  // f does not keep the properties
    if (first->pk.tiles.empty() || constants.size() + 1 != r->inputs.size()) return r;
    // f(0) != 0 of a block-sparse tensor: dense, f of the stored tiles and f(0) elsewhere.
    return unpack_filled(fp, first->pk, [&](const NodeRef& zeros) {
      std::vector<NodeRef> zs;
      for (const NodeRef& in : r->inputs) {
        const NodeRef c = constant_as(in, zeros->shape);
        zs.push_back(c ? c : full(zeros->shape, 0, in->dtype));
      }
      return make_node(r->op, std::move(zs), r->attrs, zeros->shape, r->dtype);
    });
  }
  if (kept->padded() && !keeps_padding(r, constants)) {  // f(0) != 0: the padding put back to 0
    const NodeRef m = stored_mask(*kept, std::vector<bool>(r->shape.size(), true));
    return unpack(m ? where(m, fp, Operand::integer_number(0)) : fp, *kept);
  }
  return unpack(fp, *kept);
}

}  // namespace tapestry::build
