#include "engine/ir/dtype.hpp"

#include <algorithm>

#include "engine/ir/error.hpp"

namespace tapestry {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::I8: return "i8";
    case DType::U8: return "u8";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::C64: return "c64";
    case DType::C128: return "c128";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

std::string dtype_names() {
  std::string s;
  for (DType t : kAllDTypes) {
    if (!s.empty()) s += ", ";
    s += dtype_name(t);
  }
  return s;
}

int dtype_size(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::I8:
    case DType::U8: return 1;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::I32:
    case DType::F32: return 4;
    case DType::I64:
    case DType::F64:
    case DType::C64: return 8;
    case DType::C128: return 16;
  }
  return 0;
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }
bool is_int(DType t) { return t == DType::I32 || t == DType::I64 || t == DType::I8 || t == DType::U8; }
bool is_complex(DType t) { return t == DType::C64 || t == DType::C128; }
bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }

DType real_dtype(DType t) {
  if (t == DType::C64) return DType::F32;
  if (t == DType::C128) return DType::F64;
  return t;
}

DType complex_dtype(DType t) {
  if (is_complex(t)) return t;
  return (t == DType::F64 || t == DType::I32 || t == DType::I64) ? DType::C128 : DType::C64;
}

int64_t int_min(DType t) {
  switch (t) {
    case DType::I8: return INT8_MIN;
    case DType::I32: return INT32_MIN;
    case DType::I64: return INT64_MIN;
    default: return 0;
  }
}
int64_t int_max(DType t) {
  switch (t) {
    case DType::Bool: return 1;
    case DType::I8: return INT8_MAX;
    case DType::U8: return UINT8_MAX;
    case DType::I32: return INT32_MAX;
    default: return INT64_MAX;
  }
}

int64_t wrap_int(int64_t v, DType t) {
  switch (t) {
    case DType::Bool: return v != 0;
    case DType::I8: return static_cast<int8_t>(v);
    case DType::U8: return static_cast<uint8_t>(v);
    case DType::I32: return static_cast<int32_t>(v);
    default: return v;
  }
}

namespace {

// Bits of an integer or float type, for the table below.
int bits(DType t) { return 8 * dtype_size(t); }
bool is_signed_int(DType t) { return t == DType::I8 || t == DType::I32 || t == DType::I64; }

// The float that holds every value of integer type i: f16 holds i8 and u8 (numpy's rule: a float
// of more than twice the integer's bits), f32 would not hold i32, so i32 and i64 need f64.
DType float_for_int(DType i, DType f) {
  if (bits(i) == 8) return f;
  return DType::F64;
}

}  // namespace

// numpy's table. Kinds order bool < integer < float < complex; within a kind the wider wins,
// and mixing kinds takes the smallest type of the higher kind that holds both.
DType promote(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_complex(a) || is_complex(b)) {
    if (a == DType::C128 || b == DType::C128) return DType::C128;
    const DType o = is_complex(a) ? b : a;  // c64 with a real type
    return (o == DType::F64 || o == DType::I32 || o == DType::I64) ? DType::C128 : DType::C64;
  }
  if (is_int(a) && is_int(b)) {
    if (is_signed_int(a) == is_signed_int(b)) return bits(a) >= bits(b) ? a : b;
    const DType u = is_signed_int(a) ? b : a, s = is_signed_int(a) ? a : b;  // u is u8
    return bits(s) > bits(u) ? s : DType::I32;  // u8 + i8: numpy's i16, which Tapestry lacks
  }
  if (is_int(a)) return float_for_int(a, b);
  if (is_int(b)) return float_for_int(b, a);
  // Two floats: f16 + bf16 needs f32; otherwise the wider.
  if (is_half(a) && is_half(b)) return DType::F32;
  return bits(a) >= bits(b) ? a : b;
}

DType promote_weak(DType tensor, ScalarKind scalar) {
  switch (scalar) {
    case ScalarKind::Bool: return tensor;
    case ScalarKind::Int: return tensor == DType::Bool ? DType::I64 : tensor;
    case ScalarKind::Float: return is_inexact(tensor) ? tensor : DType::F64;
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

// numpy: exp(int32) is float64; exp of bool, int8 and uint8 is float16 there, f32 here (f16 is
// computed in f32 anyway, and its 11 bits would lose most of an 8-bit integer's math).
DType float_result(DType t) {
  if (is_inexact(t)) return t;
  return (t == DType::I32 || t == DType::I64) ? DType::F64 : DType::F32;
}

DType divide_result(DType t) {
  if (is_inexact(t)) return t;
  return t == DType::Bool ? DType::F32 : DType::F64;
}

void unsupported_kernel_dtype(DType t) {
  throw InternalError(
      cat_str("a kernel was reached with dtype ", dtype_name(t), ", which it has no case for"));
}

}  // namespace tapestry
