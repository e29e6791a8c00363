// Element types and numpy's promotion rules.
//   DType t = promote(DType::I32, DType::F32);   // F64, as numpy
//   dtype_from_name("f32"), dtype_name(DType::Bool) == "bool"
// The table, what is computed how, and where Tapestry departs from numpy: docs/dtypes.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/ir/complex.hpp"
#include "engine/ir/half.hpp"

namespace tapestry {

// New dtypes go at the end: the numbers travel in plans, checkpoints and the wire.
enum class DType : uint8_t { Bool, I32, I64, F32, F64, I8, U8, F16, BF16, C64, C128 };
inline constexpr int kNumDTypes = 11;
inline constexpr DType kDefaultFloat = DType::F32;
inline constexpr DType kAllDTypes[] = {DType::Bool, DType::I8,  DType::U8,   DType::I32,
                                       DType::I64,  DType::F16, DType::BF16, DType::F32,
                                       DType::F64,  DType::C64, DType::C128};

// True when d is finite and within int64_t's range, so static_cast<int64_t>(d) is defined
// (2^63 is not: it is the first double past the range).
inline bool fits_int64(double d) { return d >= -9223372036854775808.0 && d < 9223372036854775808.0; }

std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
std::string dtype_names();  // "bool, i8, u8, ...", for error messages
int dtype_size(DType t);
bool is_float(DType t);    // a real float: f16, bf16, f32, f64
bool is_int(DType t);      // i8, u8, i32, i64 (not bool)
bool is_complex(DType t);  // c64, c128
bool is_half(DType t);     // f16, bf16: stored in 16 bits, computed in f32
inline bool is_inexact(DType t) { return is_float(t) || is_complex(t); }

// The dtype kernels compute a storage type in: f32 for f16 and bf16, t itself otherwise.
inline DType compute_dtype(DType t) { return is_half(t) ? DType::F32 : t; }
// c64 -> f32, c128 -> f64 (the type of real, imag, abs); a real type is its own.
DType real_dtype(DType t);
// The complex type holding t's values: f32 and narrower -> c64, f64 and i32/i64 -> c128.
DType complex_dtype(DType t);

// Integer range of an integer dtype (bool: 0..1).
int64_t int_min(DType t);
int64_t int_max(DType t);
// v wrapped into an integer dtype's range, as a C cast (bool: v != 0).
int64_t wrap_int(int64_t v, DType t);

// Promotion of two tensors (numpy's table: i32+f32 -> f64, bool+i32 -> i32, i8+u8 -> i32 since
// there is no i16, f16+bf16 -> f32, c64+f64 -> c128).
DType promote(DType a, DType b);

// A Lua number or boolean used as an operand is "weak" (numpy's NEP 50):
// it takes the tensor's dtype when its kind fits, else the smallest kind that holds it.
enum class ScalarKind : uint8_t { Bool, Int, Float };
DType promote_weak(DType tensor, ScalarKind scalar);
DType scalar_default_dtype(ScalarKind k);  // bool, i64, f32 when no tensor decides

// The dtype of float-valued math (exp, sqrt, atan2) on an input of type t: floats and complex
// keep theirs, bool/i8/u8 give f32 (numpy: f16), i32/i64 f64.
DType float_result(DType t);
// The dtype of true division and of mean/var of t: integers give f64 as numpy (bool f32).
DType divide_result(DType t);

// C++ type per dtype, for kernels.
template <DType> struct CType;
template <> struct CType<DType::Bool> { using type = bool; };
template <> struct CType<DType::I8> { using type = int8_t; };
template <> struct CType<DType::U8> { using type = uint8_t; };
template <> struct CType<DType::I32> { using type = int32_t; };
template <> struct CType<DType::I64> { using type = int64_t; };
template <> struct CType<DType::F16> { using type = f16; };
template <> struct CType<DType::BF16> { using type = bf16; };
template <> struct CType<DType::F32> { using type = float; };
template <> struct CType<DType::F64> { using type = double; };
template <> struct CType<DType::C64> { using type = c64; };
template <> struct CType<DType::C128> { using type = c128; };
template <DType T> using ctype_t = typename CType<T>::type;

// A kernel reached with a dtype it has no case for: a bug (builders refuse such ops first).
[[noreturn]] void unsupported_kernel_dtype(DType t);

// Calls f(TypeTag<T>{}) with the C++ type of t, for the real compute dtypes (bool, integers,
// f32, f64): the types every kernel computes in.
//   dispatch_dtype(t, [&](auto tag) { using T = typename decltype(tag)::type; ... });
// f16, bf16, c64 and c128 reach only the kernels that take them (casts, copies, complex
// arithmetic), through dispatch_any_dtype; anywhere else they are an internal error.
template <class T> struct TypeTag { using type = T; };
template <class F> decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(TypeTag<bool>{});
    case DType::I8: return f(TypeTag<int8_t>{});
    case DType::U8: return f(TypeTag<uint8_t>{});
    case DType::I32: return f(TypeTag<int32_t>{});
    case DType::I64: return f(TypeTag<int64_t>{});
    case DType::F32: return f(TypeTag<float>{});
    case DType::F64: return f(TypeTag<double>{});
    default: break;
  }
  unsupported_kernel_dtype(t);
}

// As dispatch_dtype, over every dtype.
template <class F> decltype(auto) dispatch_any_dtype(DType t, F&& f) {
  switch (t) {
    case DType::F16: return f(TypeTag<f16>{});
    case DType::BF16: return f(TypeTag<bf16>{});
    case DType::C64: return f(TypeTag<c64>{});
    case DType::C128: return f(TypeTag<c128>{});
    default: return dispatch_dtype(t, std::forward<F>(f));
  }
}

// As dispatch_dtype, over c64 and c128 only.
template <class F> decltype(auto) dispatch_complex(DType t, F&& f) {
  if (t == DType::C64) return f(TypeTag<c64>{});
  if (t != DType::C128) unsupported_kernel_dtype(t);
  return f(TypeTag<c128>{});
}

}  // namespace tapestry
