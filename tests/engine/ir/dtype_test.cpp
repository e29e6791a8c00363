#include <doctest/doctest.h>

#include "engine/ir/dtype.hpp"

using namespace tapestry;

TEST_CASE("engine.ir.dtype.names_round_trip") {
  for (DType t : {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64})
    CHECK(dtype_from_name(dtype_name(t)) == t);
  CHECK_FALSE(dtype_from_name("float32").has_value());
}

TEST_CASE("engine.ir.dtype.promotion_follows_numpy") {
  CHECK(promote(DType::I32, DType::F32) == DType::F64);
  CHECK(promote(DType::I64, DType::F32) == DType::F64);
  CHECK(promote(DType::I32, DType::F64) == DType::F64);
  CHECK(promote(DType::Bool, DType::I32) == DType::I32);
  CHECK(promote(DType::I32, DType::I64) == DType::I64);
  CHECK(promote(DType::F32, DType::F64) == DType::F64);
  CHECK(promote(DType::F32, DType::F32) == DType::F32);
  CHECK(promote(DType::F32, DType::Bool) == DType::F32);
}

TEST_CASE("engine.ir.dtype.weak_scalars") {
  CHECK(promote_weak(DType::F32, ScalarKind::Float) == DType::F32);
  CHECK(promote_weak(DType::F32, ScalarKind::Int) == DType::F32);
  CHECK(promote_weak(DType::I32, ScalarKind::Int) == DType::I32);
  CHECK(promote_weak(DType::I32, ScalarKind::Float) == DType::F64);
  CHECK(promote_weak(DType::Bool, ScalarKind::Int) == DType::I64);
  CHECK(promote_weak(DType::Bool, ScalarKind::Bool) == DType::Bool);
  CHECK(float_result(DType::I32) == DType::F64);
  CHECK(float_result(DType::Bool) == DType::F32);
  CHECK(float_result(DType::F32) == DType::F32);
}

TEST_CASE("engine.ir.dtype.new_dtypes_promote_as_numpy") {
  for (DType t : kAllDTypes) CHECK(dtype_from_name(dtype_name(t)) == t);
  CHECK(promote(DType::I8, DType::U8) == DType::I32);  // numpy: i16, which Tapestry lacks
  CHECK(promote(DType::U8, DType::I32) == DType::I32);
  CHECK(promote(DType::I8, DType::F16) == DType::F16);
  CHECK(promote(DType::I32, DType::F16) == DType::F64);
  CHECK(promote(DType::F16, DType::BF16) == DType::F32);
  CHECK(promote(DType::BF16, DType::F32) == DType::F32);
  CHECK(promote(DType::C64, DType::F64) == DType::C128);
  CHECK(promote(DType::C64, DType::I64) == DType::C128);
  CHECK(promote(DType::C64, DType::F32) == DType::C64);
  CHECK(promote(DType::Bool, DType::C64) == DType::C64);
  CHECK(promote_weak(DType::F16, ScalarKind::Float) == DType::F16);
  CHECK(promote_weak(DType::C64, ScalarKind::Float) == DType::C64);
  CHECK(promote_weak(DType::U8, ScalarKind::Int) == DType::U8);
  CHECK(divide_result(DType::I8) == DType::F64);
  CHECK(float_result(DType::U8) == DType::F32);
  CHECK(real_dtype(DType::C128) == DType::F64);
  CHECK(compute_dtype(DType::BF16) == DType::F32);
  CHECK(wrap_int(300, DType::I8) == 44);
  CHECK(wrap_int(-1, DType::U8) == 255);
  for (DType a : kAllDTypes)
    for (DType b : kAllDTypes) CHECK(promote(a, b) == promote(b, a));
}
