#include "engine/ir/build/einsum.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <limits>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/build/packed_contract.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::einsum {

namespace {

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Letter sets as bit masks (A-Z, then a-z): the path search works on sets only, and masks
// keep the 3^n subset enumeration cheap.
using Mask = uint64_t;
int bit(char c) { return c <= 'Z' ? c - 'A' : 26 + (c - 'a'); }
Mask mask_of(std::string_view s) {
  Mask m = 0;
  for (char c : s) m |= Mask{1} << bit(c);
  return m;
}

// The search problem: each operand's letters once the letters nobody else needs are summed
// away (that sum costs the same whatever the order, so it is counted once in leaf_cost).
struct Problem {
  std::vector<Mask> leaves;
  Mask out = 0;
  std::array<double, 52> size{};
  double leaf_cost = 0;

  double elements(Mask m) const {
    double n = 1;
    for (; m; m &= m - 1) n *= size[std::countr_zero(m)];
    return n;
  }
  // opt_einsum's pairwise cost: every (i,j,k) visited once, times 2 when something is summed.
  double pair_flops(Mask a, Mask b, Mask result) const {
    return elements(a | b) * (((a | b) & ~result) ? 2 : 1);
  }
};

Problem make_problem(const Spec& s, const Sizes& sizes) {
  Problem p;
  p.out = mask_of(s.output);
  for (const auto& [c, n] : sizes) p.size[bit(c)] = static_cast<double>(n);
  std::vector<Mask> raw;
  for (const std::string& in : s.inputs) raw.push_back(mask_of(in));
  for (size_t i = 0; i < raw.size(); ++i) {
    Mask need = p.out;
    for (size_t j = 0; j < raw.size(); ++j)
      if (j != i) need |= raw[j];
    p.leaves.push_back(raw[i] & need);
    if (p.leaves.back() != raw[i]) p.leaf_cost += p.elements(raw[i]);
  }
  return p;
}

// Letters the current list still needs, leaving out positions i and j.
Mask needed(const Problem& p, const std::vector<Mask>& list, size_t i, size_t j) {
  Mask need = p.out;
  for (size_t k = 0; k < list.size(); ++k)
    if (k != i && k != j) need |= list[k];
  return need;
}

// Applies one step to the list (opt_einsum's convention) and returns its flops.
double apply_step(const Problem& p, std::vector<Mask>& list, int i, int j, double* largest) {
  internal_check(i >= 0 && i < j && j < static_cast<int>(list.size()));
  const Mask r = (list[i] | list[j]) & needed(p, list, i, j);
  const double f = p.pair_flops(list[i], list[j], r);
  if (largest) *largest = std::max(*largest, p.elements(r));
  list.erase(list.begin() + j);
  list.erase(list.begin() + i);
  list.push_back(r);
  return f;
}

Path finish(const Spec& s, const Sizes& sizes, std::vector<std::pair<int, int>> steps) {
  const Problem p = make_problem(s, sizes);
  Path path;
  path.naive_flops = naive_flops(s, sizes);
  std::vector<Mask> list = p.leaves;
  double largest = 0, flops = p.leaf_cost;
  for (const auto& [i, j] : steps) flops += apply_step(p, list, i, j, &largest);
  path.steps = std::move(steps);
  path.flops = flops;
  path.largest = static_cast<int64_t>(largest);
  return path;
}

}  // namespace

Spec parse(std::string_view spec, size_t n_operands) {
  std::string s;
  for (char c : spec)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  const size_t arrow = s.find("->");
  const std::string lhs = s.substr(0, arrow);
  const std::string rhs = arrow == std::string::npos ? "" : s.substr(arrow + 2);
  for (char c : lhs + rhs) {
    user_check(c != '.', "ellipsis '...' is not supported in spec '", spec,
               "' (name every dimension with a letter)");
    if (!is_letter(c) && c != ',')
      user_error("bad character ", quoted(std::string_view(&c, 1)), " in spec ", quoted(spec),
                 " (expected letters a-z, A-Z, ',' and one '->')");
  }
  user_check(rhs.find(',') == std::string::npos, "the output of spec '", spec,
             "' must be a single term (no ',' after '->')");
  Spec out;
  size_t start = 0;
  for (;;) {
    const size_t comma = lhs.find(',', start);
    out.inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  user_check(out.inputs.size() == n_operands, "spec '", spec, "' names ", out.inputs.size(), " operand",
             out.inputs.size() == 1 ? "" : "s", " but ", n_operands, n_operands == 1 ? " was" : " were",
             " given");
  std::array<int, 128> count{};
  for (const std::string& in : out.inputs)
    for (char c : in) ++count[static_cast<unsigned char>(c)];
  if (arrow == std::string::npos) {  // numpy's implicit output: letters seen once, sorted
    for (int c = 0; c < 128; ++c)
      if (count[c] == 1) out.output += static_cast<char>(c);
    return out;
  }
  for (size_t i = 0; i < rhs.size(); ++i) {
    user_check(rhs.find(rhs[i]) == i, "output index '", rhs[i], "' appears twice in spec '", spec, "'");
    user_check(count[static_cast<unsigned char>(rhs[i])] > 0, "output index '", rhs[i],
               "' does not appear in any operand of spec '", spec, "'");
  }
  out.output = rhs;
  return out;
}

double naive_flops(const Spec& s, const Sizes& sizes) {
  Problem p = make_problem(s, sizes);
  Mask all = 0;
  for (const std::string& in : s.inputs) all |= mask_of(in);
  const double terms = static_cast<double>(s.inputs.size());
  return p.elements(all) * (std::max(1.0, terms - 1) + ((all & ~p.out) ? 1 : 0));
}

double path_flops(const Spec& s, const Sizes& sizes, const std::vector<std::pair<int, int>>& steps) {
  return finish(s, sizes, steps).flops;
}

Path optimal_path(const Spec& s, const Sizes& sizes) {
  const Problem p = make_problem(s, sizes);
  const int n = static_cast<int>(p.leaves.size());
  internal_check(n >= 1 && n <= 16);
  const uint32_t full = (1u << n) - 1;
  // For every subset S of operands: the letters of S contracted into one tensor (those
  // needed outside S), and the cheapest way to get there from a split S = S1 | S2.
  std::vector<Mask> uni(full + 1, 0), lab(full + 1, 0);
  for (uint32_t S = 1; S <= full; ++S) uni[S] = uni[S & (S - 1)] | p.leaves[std::countr_zero(S)];
  for (uint32_t S = 1; S <= full; ++S) lab[S] = uni[S] & (p.out | uni[full ^ S]);
  std::vector<double> cost(full + 1, std::numeric_limits<double>::infinity());
  std::vector<uint32_t> split(full + 1, 0);
  for (uint32_t S = 1; S <= full; ++S) {
    if (std::popcount(S) == 1) {
      cost[S] = 0;
      continue;
    }
    const uint32_t low = S & (~S + 1);
    for (uint32_t S1 = (S - 1) & S; S1 > 0; S1 = (S1 - 1) & S) {
      if (!(S1 & low)) continue;  // each split once: S1 holds the lowest operand
      const uint32_t S2 = S ^ S1;
      const double c = cost[S1] + cost[S2] + p.pair_flops(lab[S1], lab[S2], lab[S]);
      if (c < cost[S]) {
        cost[S] = c;
        split[S] = S1;
      }
    }
  }
  // The tree as opt_einsum steps: children first, each merge at the end of the list.
  std::vector<uint32_t> list;
  for (int i = 0; i < n; ++i) list.push_back(1u << i);
  std::vector<std::pair<int, int>> steps;
  auto emit = [&](auto&& self, uint32_t S) -> void {
    if (std::popcount(S) == 1) return;
    self(self, split[S]);
    self(self, S ^ split[S]);
    int a = static_cast<int>(std::find(list.begin(), list.end(), split[S]) - list.begin());
    int b = static_cast<int>(std::find(list.begin(), list.end(), S ^ split[S]) - list.begin());
    if (a > b) std::swap(a, b);
    list.erase(list.begin() + b);
    list.erase(list.begin() + a);
    list.push_back(S);
    steps.emplace_back(a, b);
  };
  emit(emit, full);
  return finish(s, sizes, std::move(steps));
}

Path greedy_path(const Spec& s, const Sizes& sizes) {
  const Problem p = make_problem(s, sizes);
  std::vector<Mask> list = p.leaves;
  std::vector<std::pair<int, int>> steps;
  while (list.size() > 1) {
    double best_removed = std::numeric_limits<double>::infinity();
    double best_flops = best_removed;
    std::pair<int, int> best{0, 1};
    for (size_t i = 0; i < list.size(); ++i) {
      for (size_t j = i + 1; j < list.size(); ++j) {
        const Mask r = (list[i] | list[j]) & needed(p, list, i, j);
        const double removed = p.elements(r) - p.elements(list[i]) - p.elements(list[j]);
        const double f = p.pair_flops(list[i], list[j], r);
        if (removed < best_removed || (removed == best_removed && f < best_flops)) {
          best_removed = removed;
          best_flops = f;
          best = {static_cast<int>(i), static_cast<int>(j)};
        }
      }
    }
    apply_step(p, list, best.first, best.second, nullptr);
    steps.push_back(best);
  }
  return finish(s, sizes, std::move(steps));
}

Path choose_path(const Spec& s, const Sizes& sizes) {
  return s.inputs.size() <= kOptimalMax ? optimal_path(s, sizes) : greedy_path(s, sizes);
}

}  // namespace tapestry::einsum

namespace tapestry::build {

namespace {

using einsum::Spec;

// An operand during lowering: a node and the letter of each of its dims.
struct Term {
  NodeRef x;
  std::string labels;
};

bool has(std::string_view s, char c) { return s.find(c) != std::string_view::npos; }

int64_t size_of(const Term& t, char c) { return t.x->shape[t.labels.find(c)]; }

Shape sizes_of(const Term& t, std::string_view letters) {
  Shape s;
  for (char c : letters) s.push_back(size_of(t, c));
  return s;
}

Term permute_to(const Term& t, const std::string& order) {
  std::vector<int> perm;
  for (char c : order) perm.push_back(static_cast<int>(t.labels.find(c)));
  return {permute(t.x, perm), order};
}

// The diagonal over dims d1 < d2 of equal size n: moved last and flattened to n*n, the
// diagonal is every (n+1)-th element, so one strided slice takes it.
Term diagonal(const Term& t, size_t d1, size_t d2) {
  const int64_t n = t.x->shape[d1];
  std::vector<int> perm;
  Term r;
  Shape flat;
  for (size_t d = 0; d < t.labels.size(); ++d) {
    if (d == d1 || d == d2) continue;
    perm.push_back(static_cast<int>(d));
    r.labels += t.labels[d];
    flat.push_back(t.x->shape[d]);
  }
  perm.push_back(static_cast<int>(d1));
  perm.push_back(static_cast<int>(d2));
  r.labels += t.labels[d1];
  std::vector<int64_t> start(flat.size() + 1, 0), step(flat.size() + 1, 1);
  step.back() = n + 1;
  Shape count = flat;
  count.push_back(n);
  flat.push_back(n * n);
  r.x = slice(reshape(permute(t.x, perm), flat), start, step, count);
  return r;
}

// Sums the dims whose letter is not in `keep`; the dtype stays (Sum widens integers).
Term sum_out(const Term& t, std::string_view keep) {
  std::vector<int> dims;
  Term r;
  for (size_t d = 0; d < t.labels.size(); ++d) {
    if (has(keep, t.labels[d])) r.labels += t.labels[d];
    else dims.push_back(static_cast<int>(d));
  }
  if (dims.empty()) return t;
  r.x = cast(reduce(Op::Sum, t.x, dims, false), t.x->dtype);
  return r;
}

// One pairwise step: the shared letters still needed are batch dims, the other shared
// ones are summed by a (batched) matmul; the result is [batch, free of a, free of b].
Term contract_pair(Term a, Term b, const std::string& keep) {
  a = sum_out(a, keep + b.labels);
  b = sum_out(b, keep + a.labels);
  std::string batch, summed, free_a, free_b;
  for (char c : a.labels) {
    if (!has(b.labels, c)) free_a += c;
    else if (has(keep, c)) batch += c;
    else summed += c;
  }
  for (char c : b.labels)
    if (!has(a.labels, c)) free_b += c;
  Term r;
  r.labels = batch + free_a + free_b;
  // Declared block sparsity or symmetry: only the nonzero tile pairs, or the stored tiles.
  if (NodeRef s = structured_contract(a.x, a.labels, b.x, b.labels, r.labels)) {
    r.x = s;
    return r;
  }
  Shape out = sizes_of(a, batch + free_a);
  for (char c : free_b) out.push_back(size_of(b, c));
  if (summed.empty()) {
    // An outer product per batch entry: a broadcasting multiply, not 1-wide matmuls.
    Shape sa = sizes_of(a, batch + free_a), sb = sizes_of(b, batch);
    sa.resize(sa.size() + free_b.size(), 1);
    sb.resize(sb.size() + free_a.size(), 1);
    for (char c : free_b) sb.push_back(size_of(b, c));
    r.x = binary(Op::Mul, reshape(permute_to(a, batch + free_a).x, sa),
                 reshape(permute_to(b, batch + free_b).x, sb));
    return r;
  }
  if (!batch.empty() && free_a.empty() && free_b.empty()) {
    // Batched dot products: multiply and sum rather than a batch of 1x1 matmuls.
    std::vector<int> dims;
    for (size_t d = batch.size(); d < batch.size() + summed.size(); ++d) dims.push_back(static_cast<int>(d));
    NodeRef m = binary(Op::Mul, permute_to(a, batch + summed).x, permute_to(b, batch + summed).x);
    r.x = cast(reduce(Op::Sum, m, dims, false), a.x->dtype);
    return r;
  }
  const int64_t nb = numel(sizes_of(a, batch)), m = numel(sizes_of(a, free_a)),
                k = numel(sizes_of(a, summed)), n = numel(sizes_of(b, free_b));
  Shape sa{m, k}, sb{k, n};
  if (!batch.empty()) {
    sa.insert(sa.begin(), nb);
    sb.insert(sb.begin(), nb);
  }
  NodeRef x = reshape(permute_to(a, batch + free_a + summed).x, sa);
  NodeRef y = reshape(permute_to(b, batch + summed + free_b).x, sb);
  r.x = reshape(matmul(x, y), out);
  return r;
}

// The operands checked, promoted, with diagonals taken and broadcast 1-sized dims dropped
// (an operand of size 1 along a letter is constant along it), ready for the path search.
struct Prepared {
  Spec raw, spec;  // as written; and after diagonals and broadcasting
  einsum::Sizes sizes;
  std::vector<Term> terms;
};

Prepared prepare(std::string_view spec, const std::vector<NodeRef>& xs) {
  user_check(!xs.empty(), "needs at least one operand after the spec");
  Prepared p;
  p.raw = einsum::parse(spec, xs.size());
  DType t = xs[0]->dtype;
  for (const NodeRef& x : xs) t = promote(t, x->dtype);
  std::map<char, size_t> from;  // the operand a letter's size came from, for messages
  for (size_t i = 0; i < xs.size(); ++i) {
    const std::string& letters = p.raw.inputs[i];
    user_check(xs[i]->shape.size() == letters.size(), "operand ", i + 1, " has ", xs[i]->shape.size(),
               " dims but '", letters, "' names ", letters.size(), " (shape ", shape_str(xs[i]->shape), ")");
    Term term{cast(xs[i], t), letters};
    for (size_t d2 = 0; d2 < term.labels.size(); ++d2) {
      const size_t d1 = term.labels.find(term.labels[d2]);
      if (d1 == d2) continue;
      user_check(term.x->shape[d1] == term.x->shape[d2], "repeated index '", term.labels[d2], "' in operand ",
                 i + 1, " needs equal sizes, got ", term.x->shape[d1], " and ", term.x->shape[d2], " (shape ",
                 shape_str(xs[i]->shape), ")");
      term = diagonal(term, d1, d2);
      d2 = 0;  // labels were reordered: scan again
    }
    for (size_t d = 0; d < term.labels.size(); ++d) {
      const char c = term.labels[d];
      const int64_t n = term.x->shape[d];
      auto it = p.sizes.find(c);
      if (it == p.sizes.end() || it->second == 1) {
        if (it == p.sizes.end() || n != 1) {
          p.sizes[c] = n;
          from[c] = i;
        }
        continue;
      }
      user_check(n == 1 || n == it->second, "sizes of index '", c, "' differ: ", it->second, " in operand ",
                 from[c] + 1, " ", shape_str(xs[from[c]]->shape), " and ", n, " in operand ", i + 1, " ",
                 shape_str(xs[i]->shape));
    }
    p.terms.push_back(std::move(term));
  }
  p.spec.output = p.raw.output;
  for (Term& term : p.terms) {
    Term kept;
    Shape shape;
    for (size_t d = 0; d < term.labels.size(); ++d) {
      if (term.x->shape[d] == 1 && p.sizes[term.labels[d]] > 1) continue;
      kept.labels += term.labels[d];
      shape.push_back(term.x->shape[d]);
    }
    if (kept.labels.size() != term.labels.size()) term = {reshape(term.x, shape), kept.labels};
    p.spec.inputs.push_back(term.labels);
  }
  return p;
}

struct Lowered {
  NodeRef result;
  einsum::Path path;
};

Lowered lower(std::string_view spec, const std::vector<NodeRef>& xs) {
  Prepared p = prepare(spec, xs);
  Lowered out;
  out.path = einsum::choose_path(p.spec, p.sizes);
  out.path.naive_flops = einsum::naive_flops(p.raw, p.sizes);
  std::vector<Term> list = p.terms;
  const std::string& output = p.spec.output;
  auto keep_except = [&](size_t i, size_t j) {
    std::string keep = output;
    for (size_t k = 0; k < list.size(); ++k)
      if (k != i && k != j) keep += list[k].labels;
    return keep;
  };
  for (size_t i = 0; i < list.size(); ++i) list[i] = sum_out(list[i], keep_except(i, i));
  for (const auto& [i, j] : out.path.steps) {
    Term r = contract_pair(list[i], list[j], keep_except(i, j));
    out.path.step_specs.push_back(list[i].labels + "," + list[j].labels + "->" + r.labels);
    list.erase(list.begin() + j);
    list.erase(list.begin() + i);
    list.push_back(std::move(r));
  }
  internal_check(list.size() == 1);
  out.result = permute_to(sum_out(list[0], output), output).x;
  return out;
}

}  // namespace

NodeRef einsum(std::string_view spec, const std::vector<NodeRef>& operands) {
  return lower(spec, operands).result;
}

einsum::Path einsum_path(std::string_view spec, const std::vector<NodeRef>& operands) {
  return lower(spec, operands).path;
}

NodeRef tensordot(const NodeRef& a, const NodeRef& b, const std::vector<int>& da,
                  const std::vector<int>& db) {
  const std::string shapes = shape_str(a->shape) + " and " + shape_str(b->shape);
  user_check(da.size() == db.size(), "names ", da.size(), " dims of a but ", db.size(), " of b (", shapes,
             ")");
  const size_t ra = a->shape.size(), rb = b->shape.size();
  user_check(ra + rb <= 52, "supports at most 52 dims in all, got ", ra + rb);
  // Spelled as an einsum: a gets letters 0..ra-1, b's summed dims reuse a's letters.
  auto letter = [](size_t i) { return static_cast<char>(i < 26 ? 'a' + i : 'A' + (i - 26)); };
  std::string la, lb(rb, ' '), out;
  for (size_t d = 0; d < ra; ++d) la += letter(d);
  std::vector<bool> used_a(ra, false);
  for (size_t i = 0; i < da.size(); ++i) {
    internal_check(da[i] >= 0 && da[i] < static_cast<int>(ra));
    internal_check(db[i] >= 0 && db[i] < static_cast<int>(rb));
    user_check(!used_a[da[i]], "dimension ", da[i] + 1, " of a is listed twice");
    user_check(lb[db[i]] == ' ', "dimension ", db[i] + 1, " of b is listed twice");
    user_check(a->shape[da[i]] == b->shape[db[i]], "dimension ", da[i] + 1, " of a (size ", a->shape[da[i]],
               ") and dimension ", db[i] + 1, " of b (size ", b->shape[db[i]], ") differ (", shapes, ")");
    used_a[da[i]] = true;
    lb[db[i]] = la[da[i]];
  }
  for (size_t d = 0; d < ra; ++d)
    if (!used_a[d]) out += la[d];
  for (size_t d = 0, next = ra; d < rb; ++d) {
    if (lb[d] == ' ') {
      lb[d] = letter(next++);
      out += lb[d];
    }
  }
  return einsum(la + "," + lb + "->" + out, {a, b});
}

NodeRef outer(const NodeRef& a, const NodeRef& b) {
  return einsum("i,j->ij", {reshape(a, {numel(a->shape)}), reshape(b, {numel(b->shape)})});
}

}  // namespace tapestry::build
