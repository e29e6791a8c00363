#include "engine/run/find_moments.hpp"

#include <algorithm>

#include "engine/ir/attrs.hpp"

namespace tapestry {

namespace {

bool float_x(const Node* n) { return n->dtype == DType::F32 || n->dtype == DType::F64; }

}  // namespace

void find_moments(const plan::FusionGroups& g, std::vector<std::pair<int, int>>& out) {
  out.clear();
  for (int i2 = 0; i2 < g.size(); ++i2) {
    if (g.absorbs[static_cast<size_t>(i2)] < 0) continue;
    const Node* s2 = g.nodes[static_cast<size_t>(i2)];
    const Node* sq = g.nodes[static_cast<size_t>(g.absorbs[static_cast<size_t>(i2)])];
    if (s2->op != Op::Sum || sq->op != Op::Square || s2->value) continue;
    const Node* sub = sq->inputs[0].get();
    if (sub->op != Op::Sub || !g.is_inlined(sub)) continue;
    const Node* x = sub->inputs[0].get();
    const Node* e = sub->inputs[1].get();
    if (!float_x(x) || s2->dtype != x->dtype || e->op != Op::Expand || e->value) continue;
    // m = expand(sum(x) / c with the reduced dims put back as 1s); the reshape comes before
    // the division (mean with keepdim) or after it.
    const Node* a = e->inputs[0].get();
    const Node* b = a->inputs.empty() ? nullptr : a->inputs[0].get();
    if (!b || a->value || b->value) continue;
    const Node* div = a->op == Op::Div ? a : b;
    const Node* reshape = a->op == Op::Div ? b : a;
    if (div->op != Op::Div || reshape->op != Op::Reshape || div->inputs[1]->op != Op::Full) continue;
    const Node* s1 = reshape == b ? reshape->inputs[0].get() : div->inputs[0].get();
    if (s1->op != Op::Sum || s1->value || s1->inputs[0].get() != x || s1->dtype != x->dtype ||
        s1->attrs != s2->attrs || g.absorbed_by(s1))
      continue;
    const int i1 = g.index_of(s1);
    if (std::any_of(out.begin(), out.end(), [&](const auto& p) { return p.first == i1; })) continue;
    // The reduced dims are a trailing run, and m is one value per kept index: the reshape only
    // puts back the reduced dims as 1s, the expand widens exactly those.
    const int rank = static_cast<int>(x->shape.size());
    const std::vector<int> dims = attrs_of<ReduceAttrs>(*s1).dims;
    bool trailing = !dims.empty();
    for (size_t i = 0; i < dims.size(); ++i)
      trailing = trailing && dims[i] == rank - static_cast<int>(dims.size()) + static_cast<int>(i);
    Shape keep = s1->shape;
    keep.resize(static_cast<size_t>(rank), 1);
    if (!trailing || reshape->shape != keep || e->shape != x->shape) continue;
    out.push_back({i1, i2});
  }
}

}  // namespace tapestry
