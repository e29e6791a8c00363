// Elementwise bindings: unary and binary ops, where, cast, clamp.
#include <lauxlib.h>
#include <lua.h>

#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

template <Op op> int l_unary(lua_State* L) {
  push_tensor(L, build::unary(op, check_tensor_like(L, 1)));
  return 1;
}

template <Op op> int l_binary(lua_State* L) {
  // a * b of computed tensors in a loop of small observations: a record, no node yet.
  if constexpr (op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div)
    if (try_record_binary(L, op)) return 1;
  const build::Operand a = check_operand(L, 1);
  const build::Operand b = check_operand(L, 2);
  push_tensor(L, build::binary(op, a, b));
  return 1;
}

// Every Map op with a Lua binding, instantiated once here.
// clang-format off
#define TAPESTRY_UNARY(X) X(Neg) X(Abs) X(Exp) X(Log) X(Sqrt) X(Rsqrt) X(Sin) X(Cos) X(Tanh) \
  X(Sigmoid) X(Relu) X(Gelu) X(Floor) X(Ceil) X(Round) X(Sign) X(Square) X(Reciprocal) X(LogicalNot) \
  X(Real) X(Imag) X(Conj) X(Angle)
#define TAPESTRY_BINARY(X) X(Add) X(Sub) X(Mul) X(Div) X(FloorDiv) X(Mod) X(Pow) X(Maximum) \
  X(Minimum) X(Atan2) X(Eq) X(Ne) X(Lt) X(Le) X(Gt) X(Ge) X(LogicalAnd) X(LogicalOr) X(Complex)
// clang-format on
#define INST_UNARY(e) template int l_unary<Op::e>(lua_State*);
#define INST_BINARY(e) template int l_binary<Op::e>(lua_State*);
TAPESTRY_UNARY(INST_UNARY)
TAPESTRY_BINARY(INST_BINARY)
#undef INST_UNARY
#undef INST_BINARY

int l_where(lua_State* L) {
  if (lua_gettop(L) == 1) return l_where_indices(L);  // tp.where(cond): the indices
  const build::Operand c = check_operand(L, 1);
  const build::Operand a = check_operand(L, 2);
  const build::Operand b = check_operand(L, 3);
  push_tensor(L, build::where(c, a, b));
  return 1;
}

int l_cast(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const char* name = luaL_typename(L, 2);
  if (lua_type(L, 2) != LUA_TSTRING) arg_error(2, cat_str("dtype string expected, got ", name));
  size_t n = 0;
  const char* p = lua_tolstring(L, 2, &n);
  const auto t = dtype_from_name(std::string_view(p, n));
  if (!t)
    arg_error(2, cat_str("unknown dtype ", quoted(std::string_view(p, n)), " (expected one of ",
                         dtype_names(), ")"));
  push_tensor(L, build::cast(x, *t));
  return 1;
}

// tp.result_type(a, b, ...): the dtype an elementwise op on these operands computes in: tensors
// promote by numpy's table, Lua numbers and booleans are weak (NEP 50).
int l_result_type(lua_State* L) {
  const int n = lua_gettop(L);
  user_check(n >= 1, "needs at least one tensor, number or boolean");
  std::optional<DType> strong;
  ScalarKind widest = ScalarKind::Bool;
  for (int i = 1; i <= n; ++i) {
    const build::Operand o = check_operand(L, i);
    if (!o.weak) strong = strong ? promote(*strong, o.node->dtype) : o.node->dtype;
    else widest = std::max(widest, o.kind);
  }
  DType t = strong ? *strong : scalar_default_dtype(widest);
  if (strong) {
    for (int i = 1; i <= n; ++i) {
      const build::Operand o = check_operand(L, i);
      if (o.weak) t = promote_weak(t, o.kind);
    }
  }
  const std::string_view name = dtype_name(t);
  lua_pushlstring(L, name.data(), name.size());
  return 1;
}

int l_clamp(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  std::optional<build::Operand> lo, hi;
  if (!lua_isnoneornil(L, 2)) lo = check_operand(L, 2);
  if (!lua_isnoneornil(L, 3)) hi = check_operand(L, 3);
  user_check(lo || hi, "needs a lower bound, an upper bound, or both");
  push_tensor(L, build::clamp(x, lo, hi));
  return 1;
}

}  // namespace tapestry::lua
