// Argument checking for the Lua bindings, and the one place where C++ errors
// become Lua errors.
//   NodeRef x = check_tensor(L, 1);      // "bad argument #1 to 'tp.sum' (Tensor expected, got table)"
//   Options o(L, 2, {"dtype", "name"});  // unknown keys are errors
//   lua_pushcclosure(L, guarded, 2) with upvalues (fn, "tp.sum")  -- see push_guarded
#pragma once

#include <lauxlib.h>
#include <lua.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/build/builders.hpp"
#include "engine/ir/error.hpp"
#include "lang/api.hpp"

namespace tapestry {

// A bad argument: formatted as Lua does, "bad argument #2 to 'tp.matmul' (Tensor expected, got table)".
class ArgError : public Error {
 public:
  ArgError(int arg, const std::string& msg) : Error(msg), arg_(arg) {}
  int arg() const { return arg_; }

 private:
  int arg_;
};

[[noreturn]] void arg_error(int arg, const std::string& msg);
[[noreturn]] void type_error(lua_State* L, int arg, const char* expected);

// Pushes fn as a closure that turns tapestry errors into Lua errors naming `name`.
void push_guarded(lua_State* L, LuaFn fn, std::string_view name);

// Tensors (Tensor userdata), operands (Tensor, number or boolean).
NodeRef check_tensor(lua_State* L, int arg);
bool is_tensor(lua_State* L, int arg);
build::Operand check_operand(lua_State* L, int arg);
// A tensor, or a number/boolean/nested table turned into one.
NodeRef check_tensor_like(lua_State* L, int arg);

int64_t check_int(lua_State* L, int arg);  // an integral number (2.0 is fine, 2.5 is not)
double check_number(lua_State* L, int arg);
// A string without NUL bytes (Lua strings may hold them; C++ names and paths would be cut
// there): `what` names it in the messages ("spec string").
std::string check_string(lua_State* L, int arg, const char* what);
// A path argument: a non-empty string without NUL bytes (a number would silently become a file name).
std::string check_path(lua_State* L, int arg);
Shape check_shape_arg(lua_State* L, int arg);  // {2,3} or a single number n (= {n})
// Dims for a reduction: nil (all), a number, or a sequence; 1-based in, 0-based out.
std::vector<int> check_dims(lua_State* L, int arg, int rank);
int check_dim(lua_State* L, int arg, int rank);  // 1-based (negative from the end) -> 0-based

// The options table, last argument of a call: only known keys are accepted.
class Options {
 public:
  Options(lua_State* L, int arg, std::initializer_list<const char*> allowed);
  bool has(const char* key) const;
  std::optional<DType> dtype() const;  // "dtype"
  std::optional<std::string> string(const char* key) const;
  std::optional<double> number(const char* key) const;
  std::optional<int64_t> integer(const char* key) const;
  std::optional<bool> boolean(const char* key) const;
  std::optional<build::Operand> scalar(const char* key) const;  // a number (kept exact) or boolean

 private:
  void push(const char* key) const;  // pushes opts[key] (or nil)
  lua_State* L_;
  int arg_;  // 0 when absent
};

// True when argument `arg` is a table that is not a tensor and not a sequence of numbers,
// i.e. looks like an options table.
bool is_options_table(lua_State* L, int arg);

// The tabular formats (CSV, SQL) hold bool, i32, i64, f32 and f64 (csv_lua.cpp): the dtype a
// read may ask for (others refused), and x ready to write (i8, u8, f16, bf16 widened exactly;
// complex refused).
namespace lua {
DType check_table_dtype(DType t, const char* format);
NodeRef table_values(const NodeRef& x, const char* format);
}  // namespace lua

}  // namespace tapestry
