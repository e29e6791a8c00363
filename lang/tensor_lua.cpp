#include "lang/tensor_lua.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <new>
#include <string_view>

#include "engine/run/evaluator.hpp"
#include "engine/session/observe.hpp"
#include "engine/session/session.hpp"
#include "lang/api.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"

namespace tapestry {

namespace {

int tensor_gc(lua_State* L) {
  if (auto* h = to_tensor_handle(L, 1)) h->~TensorHandle();
  return 0;
}

int tensor_close(lua_State* L) {
  if (auto* h = to_tensor_handle(L, 1)) {
    h->node = nullptr;
    h->rec.reset();
  }
  return 0;
}

// x.shape, x.dtype, x.name, then x[i] and x[{...}] (methods were looked up by tensor_index_fast).
int tensor_index(lua_State* L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    TensorHandle* h = to_tensor_handle(L, 1);
    const std::string_view key = lua_tostring(L, 2);
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
    lua_pushnil(L);
    return 1;  // nil for an unknown key, as Lua tables do
  }
  return lua::l_index(L);
}

// The metatable's __index: a method (x:sum(), A:matmul(p), five a CG iteration) is found here
// without passing through the error boundary (`guarded`, lang/lua_args.cpp): only Lua API
// calls, which raise Lua's own errors. Anything else goes to tensor_index, guarded (upvalue 1).
int tensor_index_fast(lua_State* L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, state_context(L).tensor_methods);
    lua_pushvalue(L, 2);
    if (lua_rawget(L, -2) != LUA_TNIL) return 1;
    lua_settop(L, 2);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, 2, 1);
  return 1;
}

}  // namespace

void push_tensor(lua_State* L, NodeRef node, std::string name) {
  void* mem = lua_newuserdatauv(L, sizeof(TensorHandle), 0);
  new (mem) TensorHandle{std::move(node), std::move(name), tensor_tag(), {}};
  // (luaL_setmetatable would hash and compare the name.)
  lua_rawgeti(L, LUA_REGISTRYINDEX, state_context(L).tensor_meta);
  lua_setmetatable(L, -2);
}

const void* tensor_tag() {
  static const char tag = 0;
  return &tag;
}

// A full userdata of a TensorHandle's size whose tag is tensor_tag(): only push_tensor makes
// one (Lua code cannot write a userdata's bytes, and no other C type here stores that address).
// Two API calls, not three (tens of times a CG iteration): lua_touserdata is null for
// anything but a userdata, and lua_rawlen is 0 for a light one (it has no block to read).
TensorHandle* to_tensor_handle(lua_State* L, int idx) {
  auto* h = static_cast<TensorHandle*>(lua_touserdata(L, idx));
  if (!h || lua_rawlen(L, idx) != sizeof(TensorHandle)) return nullptr;
  return h->tag == tensor_tag() ? h : nullptr;
}

void observe(lua_State* L, const std::vector<NodeRef>& nodes) {
  Session& s = session_of(L);
  s.telemetry().clear_cancel();
  materialize(s);
  observe_values(s, nodes);
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
  state_context(L).tensor_methods = luaL_ref(L, LUA_REGISTRYINDEX);

  luaL_newmetatable(L, kTensorMeta);
  for (const ApiEntry& e : api_entries()) {
    if (e.kind != ApiKind::Metamethod || e.fn == nullptr) continue;  // (a == b is documented, not bound)
    push_guarded(L, e.fn, e.name);
    lua_setfield(L, -2, std::string(e.name.substr(e.name.find('.') + 1)).c_str());
  }
  push_guarded(L, tensor_index, "tp.index");
  lua_pushcclosure(L, tensor_index_fast, 1);
  lua_setfield(L, -2, "__index");
  push_guarded(L, lua::l_newindex, "region write");
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, tensor_gc);
  lua_setfield(L, -2, "__gc");
  push_guarded(L, tensor_close, "tp.close");
  lua_setfield(L, -2, "__close");
  lua_pushstring(L, "Tensor");
  lua_setfield(L, -2, "__name");
  state_context(L).tensor_meta = luaL_ref(L, LUA_REGISTRYINDEX);
}

}  // namespace tapestry
