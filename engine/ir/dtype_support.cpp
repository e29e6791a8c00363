#include "engine/ir/dtype_support.hpp"

#include "engine/ir/error.hpp"

namespace tapestry {

namespace {

// Ops that move elements without computing on them: every dtype.
bool moves_only(Op op) {
  switch (op_kind(op)) {
    case OpKind::Source:
    case OpKind::View:
    case OpKind::Cat:
    case OpKind::Write:
    case OpKind::Fused: return true;
    default:  // (check_declared copies its input after reading it, any dtype: properties.md)
      return op == Op::Full || op == Op::Load || op == Op::Gather || op == Op::Scatter ||
             op == Op::CheckDeclared;
  }
}

[[noreturn]] void refuse(Op op, size_t i, DType t, const char* why) {
  user_error(op_def(op).name, " does not take ", dtype_name(t), " (operand ", i + 1, " is ", dtype_name(t),
             "): ", why);
}

}  // namespace

void check_op_dtypes(Op op, std::span<const DType> inputs, DType out) {
  if (moves_only(op)) return;
  const OpKind kind = op_kind(op);
  if (kind == OpKind::Map) {
    if (op == Op::Complex) {
      for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i] != DType::F32 && inputs[i] != DType::F64)
          refuse(op, i, inputs[i], "the parts of a complex number are f32 or f64");
      return;
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      const DType t = inputs[i];
      if (op == Op::Where && i == 0) continue;  // the condition is bool
      if (is_half(t) && op != Op::Cast && op != Op::Where)
        refuse(op, i, t, "f16 and bf16 are computed in f32 (cast the operand to f32)");
      if (is_complex(t) && !map_takes_complex(op))
        refuse(op, i, t, "it is not defined for complex numbers here (see docs/dtypes.md)");
      if (!is_complex(t) && (op == Op::Real || op == Op::Imag || op == Op::Conj || op == Op::Angle))
        refuse(op, i, t, "it takes a complex operand");
    }
    return;
  }
  // The ops with complex kernels outside the maps: sum, prod, the FFT (and matmul, scatter_add).
  const bool sum_or_prod = op == Op::Sum || op == Op::Prod || op == Op::Fft;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DType t = inputs[i];
    if (is_half(t)) refuse(op, i, t, "f16 and bf16 are computed in f32 (cast the operand to f32)");
    if (is_complex(t) && !(sum_or_prod || op == Op::Matmul || op == Op::ScatterAdd))
      refuse(op, i, t,
             "complex numbers have no order and this op has no complex kernel (see docs/dtypes.md)");
  }
  if (is_storage_or_complex(out) && !(sum_or_prod || op == Op::Matmul || op == Op::ScatterAdd))
    user_error(op_def(op).name, " cannot produce ", dtype_name(out));
}

}  // namespace tapestry
