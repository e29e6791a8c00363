// Reductions and contractions: sum ... argmin, mean, var, std, norm, matmul.
#include <lauxlib.h>
#include <lua.h>

#include <cmath>

#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

// x:op([dims] [,opts]): dims may be left out when the options come second.
struct ReduceArgs {
  NodeRef x;
  std::vector<int> dims;
  bool keepdim = false;
  double correction = 0;
  double p = 2;
};

ReduceArgs reduce_args(lua_State* L, std::initializer_list<const char*> allowed) {
  ReduceArgs r;
  r.x = check_tensor_like(L, 1);
  if (lua_gettop(L) <= 1) return r;  // x:sum(): every dim, no options (two a CG iteration)
  const int rank = static_cast<int>(r.x->shape.size());
  int oi = 3;
  if (is_options_table(L, 2) && lua_isnoneornil(L, 3)) oi = 2;
  else r.dims = check_dims(L, 2, rank);
  Options o(L, oi, allowed);
  r.keepdim = o.boolean("keepdim").value_or(false);
  for (const char* k : allowed) {
    if (std::string(k) == "correction") r.correction = o.number("correction").value_or(0);
    if (std::string(k) == "p") r.p = o.number("p").value_or(2);
  }
  return r;
}

}  // namespace

template <Op op> int l_reduce(lua_State* L) {
  if constexpr (op == Op::Sum)
    if (try_record_sum(L)) return 1;
  ReduceArgs r = reduce_args(L, {"keepdim"});
  push_tensor(L, build::reduce(op, r.x, r.dims, r.keepdim));
  return 1;
}
template int l_reduce<Op::Sum>(lua_State*);
template int l_reduce<Op::Prod>(lua_State*);
template int l_reduce<Op::Max>(lua_State*);
template int l_reduce<Op::Min>(lua_State*);
template int l_reduce<Op::All>(lua_State*);
template int l_reduce<Op::Any>(lua_State*);

int l_mean(lua_State* L) {
  ReduceArgs r = reduce_args(L, {"keepdim"});
  push_tensor(L, build::mean(r.x, r.dims, r.keepdim));
  return 1;
}

int l_var(lua_State* L) {
  ReduceArgs r = reduce_args(L, {"keepdim", "correction"});
  push_tensor(L, build::var(r.x, r.dims, r.correction, r.keepdim));
  return 1;
}

int l_std(lua_State* L) {
  ReduceArgs r = reduce_args(L, {"keepdim", "correction"});
  push_tensor(L, build::std_dev(r.x, r.dims, r.correction, r.keepdim));
  return 1;
}

// x:norm([p] [,dims] [,opts]): p first, as torch's x.norm(p, dim) and linalg.norm(x, p).
int l_norm(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const int rank = static_cast<int>(x->shape.size());
  double p = 2;
  std::vector<int> dims;
  int oi = 2;
  if (!(is_options_table(L, 2) && lua_isnoneornil(L, 3))) {
    if (lua_type(L, 2) == LUA_TSTRING) {
      const std::string s = lua_tostring(L, 2);
      if (s == "fro") p = 2;
      else if (s == "inf") p = HUGE_VAL;
      else arg_error(2, "p must be a positive number, \"fro\" or \"inf\", got '" + s + "'");
    } else if (!lua_isnoneornil(L, 2)) {
      p = check_number(L, 2);
    }
    user_check(p > 0, "p must be positive, got ", p, " (x:norm(p, dims): p comes first, as in torch)");
    oi = 3;
    if (!(is_options_table(L, 3) && lua_isnoneornil(L, 4))) {
      dims = check_dims(L, 3, rank);
      oi = 4;
    }
  }
  Options o(L, oi, {"keepdim"});
  push_tensor(L, build::norm(x, p, dims, o.boolean("keepdim").value_or(false)));
  return 1;
}

template <Op op> int l_argreduce(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  int oi = 3;
  std::optional<int> dim;
  if (is_options_table(L, 2) && lua_isnoneornil(L, 3)) oi = 2;
  else if (!lua_isnoneornil(L, 2)) dim = check_dim(L, 2, static_cast<int>(x->shape.size()));
  Options o(L, oi, {"keepdim"});
  push_tensor(L, build::argreduce(op, x, dim, o.boolean("keepdim").value_or(false)));
  return 1;
}
template int l_argreduce<Op::ArgMax>(lua_State*);
template int l_argreduce<Op::ArgMin>(lua_State*);

int l_matmul(lua_State* L) {
  if (try_record_matmul(L)) return 1;
  const NodeRef a = check_tensor_like(L, 1);
  const NodeRef b = check_tensor_like(L, 2);
  push_tensor(L, build::matmul(a, b));
  return 1;
}

}  // namespace tapestry::lua
