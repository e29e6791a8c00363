#include "engine/ir/dtype.hpp"

#include <algorithm>

namespace tapestry {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64})
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

int dtype_size(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::I32: return 4;
    case DType::F32: return 4;
    case DType::I64: return 8;
    case DType::F64: return 8;
  }
  return 0;
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F64; }
bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }

// numpy: mixing an integer with f32 needs f64 to hold every i32/i64 value
// (numpy rounds i64 too). Otherwise the larger type wins.
DType promote(DType a, DType b) {
  if (a == b) return a;
  if (a > b) std::swap(a, b);  // enum order: Bool < I32 < I64 < F32 < F64
  if (is_int(a) && b == DType::F32) return DType::F64;
  return b;
}

DType promote_weak(DType tensor, ScalarKind scalar) {
  switch (scalar) {
    case ScalarKind::Bool: return tensor;
    case ScalarKind::Int: return tensor == DType::Bool ? DType::I64 : tensor;
    case ScalarKind::Float: return is_float(tensor) ? tensor : DType::F64;
  }
  return tensor;
}

DType scalar_default_dtype(ScalarKind k) {
  switch (k) {
    case ScalarKind::Bool: return DType::Bool;
    case ScalarKind::Int: return DType::I64;
    case ScalarKind::Float: return kDefaultFloat;
  }
  return kDefaultFloat;
}

// numpy: exp(int32) is float64; bool would be float16, which we lack: f32.
DType float_result(DType t) {
  if (is_float(t)) return t;
  return t == DType::Bool ? DType::F32 : DType::F64;
}

}  // namespace tapestry
