#include "engine/ir/fused.hpp"

#include <algorithm>

#include "engine/ir/error.hpp"

namespace tapestry {

namespace {

constexpr int kInstrInts = 7;  // op, out, in, a, b, c, integer

void encode_program(const FusedProgram& p, Attrs& a) {
  a.ints.push_back(static_cast<int64_t>(p.instrs.size()));
  for (const MapInstr& i : p.instrs) {
    a.ints.insert(a.ints.end(), {static_cast<int64_t>(i.op), static_cast<int64_t>(i.out),
                                 static_cast<int64_t>(i.in), i.a, i.b, i.c, i.integer});
    a.reals.push_back(i.real);
  }
}

// Reads the program at ints[pos...]; checks what a corrupted plan could get wrong: op kinds,
// operand counts, and that every operand register is defined before it is read.
FusedProgram decode_program(const Attrs& a, size_t pos, int num_leaves) {
  FusedProgram p;
  p.num_leaves = num_leaves;
  internal_check(pos < a.ints.size());
  const int64_t n = a.ints[pos++];
  internal_check(n >= 1 && a.ints.size() == pos + static_cast<size_t>(n) * kInstrInts &&
                 a.reals.size() == static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const int64_t* f = &a.ints[pos + static_cast<size_t>(j) * kInstrInts];
    internal_check(f[0] >= 0 && f[0] < kNumOps && f[1] >= 0 && f[1] < kNumDTypes && f[2] >= 0 &&
                   f[2] < kNumDTypes);
    MapInstr i{static_cast<Op>(f[0]),           static_cast<DType>(f[1]),
               static_cast<DType>(f[2]),        static_cast<int>(f[3]),
               static_cast<int>(f[4]),          static_cast<int>(f[5]),
               a.reals[static_cast<size_t>(j)], f[6]};
    const int arity = i.op == Op::Full ? 0 : op_def(i.op).arity;
    internal_check(i.op == Op::Full || op_kind(i.op) == OpKind::Map);
    const int regs[3] = {i.a, i.b, i.c};
    for (int k = 0; k < 3; ++k) {
      if (k < arity) internal_check(regs[k] >= 0 && regs[k] < num_leaves + j);
      else internal_check(regs[k] == -1);
    }
    p.instrs.push_back(i);
  }
  return p;
}

// Infix operators print as the user wrote them; the rest as calls.
int precedence(Op op) {
  switch (op) {
    case Op::Add:
    case Op::Sub: return 1;
    case Op::Mul:
    case Op::Div: return 2;
    case Op::Neg: return 3;
    case Op::Pow: return 4;
    default: return 9;  // calls, leaves and constants never need parentheses
  }
}

const char* infix(Op op) {
  switch (op) {
    case Op::Add: return " + ";
    case Op::Sub: return " - ";
    case Op::Mul: return " * ";
    case Op::Div: return " / ";
    case Op::Pow: return "^";
    default: return nullptr;
  }
}

constexpr size_t kMaxTerm = 240;

std::string cut(std::string s) {
  if (s.size() > kMaxTerm) s = s.substr(0, kMaxTerm) + "...";
  return s;
}

std::string describe_program(const FusedProgram& p) {
  std::vector<std::string> text;
  std::vector<int> prec;
  for (int l = 0; l < p.num_leaves; ++l) {
    text.push_back(cat_str("x", l));
    prec.push_back(9);
  }
  auto wrap = [&](int r, bool paren) { return paren ? cat_str("(", text[r], ")") : text[r]; };
  for (const MapInstr& i : p.instrs) {
    std::string s;
    const int pr = precedence(i.op);
    if (i.op == Op::Full) {
      s = is_float(i.out)        ? num_str(i.real)
          : i.out == DType::Bool ? std::string(i.integer ? "true" : "false")
                                 : std::to_string(i.integer);
    } else if (i.op == Op::Cast) {
      s = cat_str(dtype_name(i.out), "(", text[i.a], ")");
    } else if (i.op == Op::Neg) {
      s = cat_str("-", wrap(i.a, prec[i.a] < pr));
    } else if (const char* sym = infix(i.op)) {
      // Left-associative operators parenthesize an equal-precedence right operand; pow
      // (right-associative) the left one.
      const bool right_assoc = i.op == Op::Pow;
      s = wrap(i.a, right_assoc ? prec[i.a] <= pr : prec[i.a] < pr) + sym +
          wrap(i.b, right_assoc ? prec[i.b] < pr : prec[i.b] <= pr);
    } else {
      s = cat_str(op_def(i.op).name, "(", text[i.a]);
      if (i.b >= 0) s += ", " + text[i.b];
      if (i.c >= 0) s += ", " + text[i.c];
      s += ")";
    }
    text.push_back(cut(std::move(s)));
    prec.push_back(pr);
  }
  return text.back();
}

}  // namespace

Attrs encode_fused_map(const FusedProgram& p) {
  internal_check(!p.instrs.empty());
  Attrs a;
  encode_program(p, a);
  return a;
}

Attrs encode_fused_reduce(const FusedReduction& r) {
  internal_check(op_kind(r.op) == OpKind::Reduce && !r.program.instrs.empty());
  Attrs a;
  a.ints.push_back(static_cast<int64_t>(r.op));
  a.ints.push_back(static_cast<int64_t>(r.shape.size()));
  a.ints.insert(a.ints.end(), r.shape.begin(), r.shape.end());
  a.ints.push_back(static_cast<int64_t>(r.dims.size()));
  a.ints.insert(a.ints.end(), r.dims.begin(), r.dims.end());
  encode_program(r.program, a);
  return a;
}

FusedProgram decode_fused_map(const Node& n) {
  internal_check(n.op == Op::FusedMap);
  return decode_program(n.attrs, 0, static_cast<int>(n.inputs.size()));
}

FusedReduction decode_fused_reduce(const Node& n) {
  internal_check(n.op == Op::FusedReduce);
  const std::vector<int64_t>& v = n.attrs.ints;
  FusedReduction r;
  size_t pos = 0;
  auto next = [&] {
    internal_check(pos < v.size());
    return v[pos++];
  };
  const int64_t op = next();
  internal_check(op >= 0 && op < kNumOps && op_kind(static_cast<Op>(op)) == OpKind::Reduce);
  r.op = static_cast<Op>(op);
  const int64_t rank = next();
  internal_check(rank >= 0);
  for (int64_t d = 0; d < rank; ++d) r.shape.push_back(next());
  const int64_t nd = next();
  internal_check(nd >= 1 && nd <= rank);
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t dim = next();
    internal_check(dim >= 0 && dim < rank && (r.dims.empty() || dim > r.dims.back()));
    r.dims.push_back(static_cast<int>(dim));
  }
  r.program = decode_program(n.attrs, pos, static_cast<int>(n.inputs.size()));
  for (const NodeRef& in : n.inputs) internal_check(in->shape == r.shape);
  return r;
}

std::string describe_fused(const Node& n) {
  if (n.op == Op::FusedMap) return describe_program(decode_fused_map(n));
  internal_check(n.op == Op::FusedReduce);
  const FusedReduction r = decode_fused_reduce(n);
  std::string dims;
  for (int d : r.dims) dims += cat_str(dims.empty() ? "" : ",", d + 1);
  return cat_str(op_def(r.op).name, "(", describe_program(r.program), "; dims ", dims, ")");
}

}  // namespace tapestry
