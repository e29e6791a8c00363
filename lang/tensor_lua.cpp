#include "lang/tensor_lua.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <new>

#include "engine/exec/evaluator.hpp"
#include "engine/exec/observe.hpp"
#include "engine/store/environment.hpp"
#include "lang/api.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"

namespace tapestry {

namespace {

constexpr const char* kMethodsKey = "tapestry.Tensor.methods";

int tensor_gc(lua_State* L) {
  auto* h = static_cast<TensorHandle*>(luaL_testudata(L, 1, kTensorMeta));
  if (h) h->~TensorHandle();
  return 0;
}

int tensor_close(lua_State* L) {
  if (auto* h = to_tensor_handle(L, 1)) h->node = nullptr;
  return 0;
}

// x.shape, x.dtype, x.name, methods, then x[i] and x[{...}].
int tensor_index(lua_State* L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    TensorHandle* h = to_tensor_handle(L, 1);
    const std::string key = lua_tostring(L, 2);
    if (key == "name") {
      if (h->name.empty()) lua_pushnil(L);
      else lua_pushstring(L, h->name.c_str());
      return 1;
    }
    if (key == "shape" || key == "dtype") {
      const NodeRef x = check_tensor(L, 1);
      if (key == "dtype") {
        lua_pushstring(L, std::string(dtype_name(x->dtype)).c_str());
      } else {
        lua_createtable(L, static_cast<int>(x->shape.size()), 0);
        for (size_t i = 0; i < x->shape.size(); ++i) {
          lua_pushinteger(L, x->shape[i]);
          lua_seti(L, -2, static_cast<lua_Integer>(i + 1));
        }
      }
      return 1;
    }
    lua_getfield(L, LUA_REGISTRYINDEX, kMethodsKey);
    lua_getfield(L, -1, key.c_str());
    return 1;  // nil for an unknown key, as Lua tables do
  }
  return lua::l_index(L);
}

}  // namespace

void push_tensor(lua_State* L, NodeRef node, std::string name) {
  void* mem = lua_newuserdatauv(L, sizeof(TensorHandle), 0);
  new (mem) TensorHandle{std::move(node), std::move(name)};
  luaL_setmetatable(L, kTensorMeta);
}

TensorHandle* to_tensor_handle(lua_State* L, int idx) {
  return static_cast<TensorHandle*>(luaL_testudata(L, idx, kTensorMeta));
}

void observe(const std::vector<NodeRef>& nodes) {
  clear_cancel();
  env().materialize();
  observe_values(nodes);
}

void register_tensor_type(lua_State* L) {
  // Methods: "Tensor:x" entries and tp functions marked as methods.
  lua_newtable(L);
  for (const ApiEntry& e : api_entries()) {
    std::string_view method;
    if (e.kind == ApiKind::Method) method = e.name.substr(e.name.find(':') + 1);
    else if (e.kind == ApiKind::Function && e.method) method = e.name.substr(e.name.find('.') + 1);
    else continue;
    push_guarded(L, e.fn, e.name);
    lua_setfield(L, -2, std::string(method).c_str());
  }
  lua_setfield(L, LUA_REGISTRYINDEX, kMethodsKey);

  luaL_newmetatable(L, kTensorMeta);
  for (const ApiEntry& e : api_entries()) {
    if (e.kind != ApiKind::Metamethod) continue;
    push_guarded(L, e.fn, e.name);
    lua_setfield(L, -2, std::string(e.name.substr(e.name.find('.') + 1)).c_str());
  }
  push_guarded(L, tensor_index, "tp.index");
  lua_setfield(L, -2, "__index");
  push_guarded(L, lua::l_newindex, "region write");
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, tensor_gc);
  lua_setfield(L, -2, "__gc");
  push_guarded(L, tensor_close, "tp.close");
  lua_setfield(L, -2, "__close");
  lua_pushstring(L, "Tensor");
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
}

}  // namespace tapestry
