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
