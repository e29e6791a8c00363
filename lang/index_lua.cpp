// Indexing: gather, scatter, scatter_add, index_select, take, where(cond)'s indices, and the
// tensor keys of x[...] and tp.env.w[...] = v (integer tensors and bool masks).
// A mask's count decides a result's shape, so it is observed first, in two phases: the mask
// is computed and kept where it lies (sharded on several ranks), then its count; the node
// that places the elements then reads the kept mask. The graph stays static-shaped.
#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <optional>

#include "engine/ir/build/builders.hpp"
#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "lang/bindings.hpp"
#include "lang/convert.hpp"
#include "lang/index_lua.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

// An index argument: an integer Tensor, or a Lua table / number made an i64 tensor.
NodeRef check_index(lua_State* L, int arg) {
  if (is_tensor(L, arg)) return check_tensor(L, arg);
  if (lua_type(L, arg) != LUA_TTABLE && lua_type(L, arg) != LUA_TNUMBER) type_error(L, arg, "index Tensor");
  return tensor_from_lua(L, arg, DType::I64);
}

int rank_of(const NodeRef& x) { return static_cast<int>(x->shape.size()); }

// The number of nonzero elements of mask, observed; mask itself is kept computed.
int64_t observe_count(lua_State* L, const NodeRef& mask) {
  Session& s = session_of(L);
  s.telemetry().clear_cancel();
  materialize(s);
  observe_kept(s, {mask});
  const NodeRef count = build::reduce(Op::Sum, build::cast(mask, DType::Bool), {}, false);
  observe(L, {count});
  return count->value->data<int64_t>()[0];  // 0: an empty result, as numpy's
}

// A tensor key of x[...]: its dim, for a table with one tensor and otherwise only {} entries.
struct TensorKey {
  NodeRef key;
  int dim = 0;
};

std::optional<TensorKey> table_key(lua_State* L, int arg);

// The tensor key of argument `arg`, if it holds one: a Tensor, or a table {{}, .., t, ..}.
std::optional<TensorKey> tensor_key(lua_State* L, int arg, const NodeRef& x) {
  std::optional<TensorKey> found;
  if (is_tensor(L, arg)) found = TensorKey{check_tensor(L, arg), 0};
  else if (lua_type(L, arg) != LUA_TTABLE) return std::nullopt;
  else found = table_key(L, arg);
  if (!found) return std::nullopt;
  const DType t = found->key->dtype;
  user_check(is_int(t) || t == DType::Bool, "an index tensor must be integer (i32, i64) or bool, got ",
             dtype_name(t), " ", shape_str(found->key->shape));
  user_check(t != DType::Bool || found->dim == 0, "a bool mask indexes x's leading dims: put it first");
  user_check(found->dim < std::max(rank_of(x), 1), "too many indices (", found->dim + 1,
             ") for a tensor of shape ", shape_str(x->shape));
  return found;
}

// A table {{}, .., t, ..} with one tensor t: its dim.
std::optional<TensorKey> table_key(lua_State* L, int arg) {
  std::optional<TensorKey> found;
  const lua_Integer n = luaL_len(L, arg);
  for (lua_Integer k = 1; k <= n; ++k) {
    lua_geti(L, arg, k);
    if (is_tensor(L, -1)) {
      user_check(!found, "only one index tensor per subscript is supported, got another at dim ", k);
      found = TensorKey{check_tensor(L, -1), static_cast<int>(k - 1)};
    }
    lua_pop(L, 1);
  }
  if (!found) return std::nullopt;
  for (lua_Integer k = 1; k <= n; ++k) {  // the other entries must keep their dims whole
    lua_geti(L, arg, k);
    const bool whole = is_tensor(L, -1) || (lua_type(L, -1) == LUA_TTABLE && luaL_len(L, -1) == 0);
    lua_pop(L, 1);
    user_check(whole, "with an index tensor, the other entries must be {} (whole dims); dim ", k,
               " is not (index it in a second step)");
  }
  return found;
}

}  // namespace

int l_gather(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const int d = check_dim(L, 2, rank_of(x));
  push_tensor(L, build::gather(x, d, check_index(L, 3)));
  return 1;
}

template <Op op> int l_scatter(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const int d = check_dim(L, 2, rank_of(x));
  const NodeRef index = check_index(L, 3);
  const IndexFn fn = op == Op::Scatter ? IndexFn::Scatter : IndexFn::ScatterAdd;
  push_tensor(L, build::scatter(op, x, d, index, check_operand(L, 4), fn));
  return 1;
}
template int l_scatter<Op::Scatter>(lua_State* L);
template int l_scatter<Op::ScatterAdd>(lua_State* L);

int l_index_select(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  const int d = check_dim(L, 2, rank_of(x));
  push_tensor(L, build::index_select(x, d, check_index(L, 3)));
  return 1;
}

int l_take(lua_State* L) {
  const NodeRef x = check_tensor(L, 1);
  push_tensor(L, build::take(x, check_index(L, 2)));
  return 1;
}

// tp.where(cond): one 1-based index tensor per dim of cond (numpy.nonzero, torch.where(cond)).
int l_where_indices(lua_State* L) {
  const NodeRef cond = check_tensor_like(L, 1);
  user_check(!cond->shape.empty(), "cond must have at least 1 dim, got a scalar");
  const NodeRef flat = build::nonzero(cond, observe_count(L, cond));
  const std::vector<NodeRef> per_dim = build::unravel(flat, cond->shape);
  for (const NodeRef& i : per_dim) push_tensor(L, i);
  return static_cast<int>(per_dim.size());
}

bool index_by_tensor(lua_State* L, const NodeRef& x) {
  const std::optional<TensorKey> k = tensor_key(L, 2, x);
  if (!k) return false;
  if (k->key->dtype == DType::Bool) {
    push_tensor(L, build::masked_select(x, k->key, observe_count(L, k->key)));
  } else {
    user_check(!x->shape.empty(), "cannot index a scalar");
    push_tensor(L, build::index_tensor(x, k->dim, k->key));
  }
  return true;
}

std::optional<NodeRef> write_by_tensor(lua_State* L, const NodeRef& x) {
  const std::optional<TensorKey> k = tensor_key(L, 2, x);
  if (!k) return std::nullopt;
  const build::Operand v = check_operand(L, 3);
  if (k->key->dtype != DType::Bool) return build::index_put(x, k->dim, k->key, v);
  if (v.weak) return build::masked_fill(x, k->key, v);
  return build::masked_scatter(x, k->key, v.node, observe_count(L, k->key));
}

}  // namespace tapestry::lua
