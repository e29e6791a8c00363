// Element types and numpy's promotion rules.
//   DType t = promote(DType::I32, DType::F32);   // F64, as numpy
//   dtype_from_name("f32"), dtype_name(DType::Bool) == "bool"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tapestry {

enum class DType : uint8_t { Bool, I32, I64, F32, F64 };
inline constexpr int kNumDTypes = 5;
inline constexpr DType kDefaultFloat = DType::F32;

// True when d is finite and within int64_t's range, so static_cast<int64_t>(d) is defined
// (2^63 is not: it is the first double past the range).
inline bool fits_int64(double d) { return d >= -9223372036854775808.0 && d < 9223372036854775808.0; }

std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_size(DType t);
bool is_float(DType t);
bool is_int(DType t);  // I32 / I64 (not Bool)

// Promotion of two tensors (numpy's table: i32+f32 -> f64, bool+i32 -> i32).
DType promote(DType a, DType b);

// A Lua number or boolean used as an operand is "weak" (numpy's NEP 50):
// it takes the tensor's dtype when its kind fits, else the smallest kind that holds it.
enum class ScalarKind : uint8_t { Bool, Int, Float };
DType promote_weak(DType tensor, ScalarKind scalar);
DType scalar_default_dtype(ScalarKind k);  // bool, i64, f32 when no tensor decides

// The dtype of float-valued math (exp, sqrt, /) on an input of type t.
DType float_result(DType t);

// C++ type per dtype, for kernels.
template <DType> struct CType;
template <> struct CType<DType::Bool> { using type = bool; };
template <> struct CType<DType::I32> { using type = int32_t; };
template <> struct CType<DType::I64> { using type = int64_t; };
template <> struct CType<DType::F32> { using type = float; };
template <> struct CType<DType::F64> { using type = double; };
template <DType T> using ctype_t = typename CType<T>::type;

// Calls f(std::integral_constant-like tag) with the C++ type of t:
//   dispatch_dtype(t, [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <class T> struct TypeTag { using type = T; };
template <class F> decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(TypeTag<bool>{});
    case DType::I32: return f(TypeTag<int32_t>{});
    case DType::I64: return f(TypeTag<int64_t>{});
    case DType::F32: return f(TypeTag<float>{});
    case DType::F64: break;
  }
  return f(TypeTag<double>{});
}

}  // namespace tapestry
