// Maps and full reductions of packed tensors (packed.hpp): computed on the stored tiles only.
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
  return is_float(a.dtype) ? a.real : static_cast<double>(a.integer);
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
    case Op::Square: return true;
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

NodeRef packed_map(const NodeRef& r) {
  if (op_kind(r->op) != OpKind::Map || r->inputs.empty()) return r;
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
    } else {
      return r;
    }
  }
  const Properties p = properties_of(r);
  if (p.uniform || p.zero) return r;
  const std::optional<Packing> kept = packing_of(r->shape, p.declared());
  if (!kept || !same_layout(*kept, first->pk)) return r;  // f does not keep the properties
  if (kept->padded() && !keeps_padding(r, constants)) return r;
  return unpack(make_node(r->op, std::move(ins), r->attrs, ps, r->dtype), *kept);
}

NodeRef packed_reduce(Op op, const NodeRef& x) {
  if (!is_float(x->dtype) || (op != Op::Sum && op != Op::Max && op != Op::Min)) return nullptr;
  const std::optional<Unpacked> u = unpacked(x);
  if (!u) return nullptr;
  const Packing& pk = u->pk;
  const std::vector<int> all;  // every dim
  if (!pk.tiles.empty()) {     // the zero tiles add nothing, and are 0 for max and min
    const NodeRef r = reduce(op, u->p, all, false);
    return op == Op::Sum ? r : binary(op == Op::Max ? Op::Maximum : Op::Minimum, r, Operand::number(0));
  }
  for (const PackedGroup& G : pk.groups)
    if (G.anti || (op != Op::Sum && G.n % G.b != 0)) return nullptr;  // (padding is not x's)
  if (op != Op::Sum) return reduce(op, u->p, all, false);
  NodeRef weighted = u->p;  // each stored tile counted as often as it appears
  for (size_t m = 0; m < pk.groups.size(); ++m) {
    Shape ws(u->p->shape.size(), 1);
    ws[m] = static_cast<int64_t>(pk.groups[m].stored.size());
    weighted = binary(Op::Mul, weighted, reshape(tile_weights(pk.groups[m], 1, x->dtype), ws));
  }
  return reduce(Op::Sum, weighted, all, false);
}

}  // namespace tapestry::build
