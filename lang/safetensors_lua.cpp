// safetensors files: tp.load_safetensors, tp.save_safetensors (engine/io/safetensors.hpp).
//   local w, meta = tp.load_safetensors("model.safetensors", {env = true})
//   tp.save_safetensors({w = w, b = b}, "out.safetensors", {metadata = {format = "pt"}})
// On N ranks each rank reads (and writes) only its own rows of every tensor, as tp.load does.
#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/io/lazy_load.hpp"
#include "engine/io/safetensors.hpp"
#include "engine/session/session.hpp"
#include "engine/session/sharded_io.hpp"
#include "engine/telemetry/telemetry.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/save_parts.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

// The environment name of a tensor called `name` in a file: "layer.0.weight" -> "layer_0_weight".
std::string env_name(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  return s;
}

// A table of strings (opts.metadata), as a map.
std::map<std::string, std::string> check_metadata(lua_State* L, int opts) {
  std::map<std::string, std::string> m;
  if (opts == 0 || lua_type(L, opts) != LUA_TTABLE) return m;
  lua_getfield(L, opts, "metadata");
  const int t = lua_gettop(L);
  if (lua_isnil(L, t)) {
    lua_pop(L, 1);
    return m;
  }
  if (lua_type(L, t) != LUA_TTABLE) arg_error(opts, "option 'metadata' must be a table of strings");
  lua_pushnil(L);
  while (lua_next(L, t) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
      arg_error(opts, "option 'metadata' must map strings to strings");
    m[lua_tostring(L, -2)] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return m;
}

// The (name, tensor) pairs of a table or of tp.env (its __pairs), in name order.
std::vector<std::pair<std::string, NodeRef>> check_named_tensors(lua_State* L, int arg) {
  if (lua_type(L, arg) != LUA_TTABLE) type_error(L, arg, "table of tensors");
  std::vector<std::pair<std::string, NodeRef>> out;
  auto take = [&](int key, int value) {
    if (lua_type(L, key) != LUA_TSTRING) arg_error(arg, "tensor names must be strings");
    std::string name = lua_tostring(L, key);
    if (name.empty() || name == "__metadata__" || name.find('\0') != std::string::npos)
      arg_error(arg, cat_str("'", name, "' cannot name a tensor in a safetensors file"));
    if (!is_tensor(L, value)) arg_error(arg, cat_str("'", name, "' is not a Tensor"));
    out.emplace_back(std::move(name), check_tensor(L, value));
  };
  if (luaL_getmetafield(L, arg, "__pairs") != LUA_TNIL) {  // tp.env
    lua_pushvalue(L, arg);
    lua_call(L, 1, 3);  // iterator, state, control
    const int base = lua_gettop(L) - 2;
    while (true) {
      lua_pushvalue(L, base);
      lua_pushvalue(L, base + 1);
      lua_pushvalue(L, base + 2);
      lua_call(L, 2, 2);
      if (lua_isnil(L, -2)) {
        lua_pop(L, 2);
        break;
      }
      take(lua_gettop(L) - 1, lua_gettop(L));
      lua_pop(L, 1);
      lua_replace(L, base + 2);  // the key is the next control value
    }
    lua_pop(L, 3);
  } else {
    lua_pushnil(L);
    while (lua_next(L, arg) != 0) {
      take(lua_gettop(L) - 1, lua_gettop(L));
      lua_pop(L, 1);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

}  // namespace

int l_load_safetensors(lua_State* L) {
  const std::string path = check_path(L, 1);
  const Options o(L, 2, {"dtype", "env"});
  const std::optional<DType> dtype = o.dtype();
  const bool to_env = o.boolean("env").value_or(false);
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  const io::SafetensorsFile f = io::read_safetensors_header(path);
  // Every name must be free of collisions before anything is read or bound.
  std::map<std::string, std::string> bound;  // env name -> file name
  if (to_env)
    for (const io::SafetensorsEntry& e : f.tensors) {
      const auto [it, fresh] = bound.emplace(env_name(e.name), e.name);
      user_check(fresh, "'", path, "': tensors '", it->second, "' and '", e.name, "' would both be tp.env.",
                 it->first);
    }
  std::vector<NodeRef> nodes;  // lazy: each read when observed, only the boxes a plan needs
  for (const io::SafetensorsEntry& e : f.tensors) nodes.push_back(io::lazy_raw(path, e.header));
  lua_createtable(L, 0, static_cast<int>(nodes.size()));
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeRef n = nodes[i];
    if (dtype && *dtype != n->dtype) n = build::cast(n, *dtype);
    const std::string name = to_env ? env_name(f.tensors[i].name) : "";
    if (to_env) s.env().bind(name, n);
    push_tensor(L, std::move(n), name);
    lua_setfield(L, -2, f.tensors[i].name.c_str());
  }
  lua_createtable(L, 0, static_cast<int>(f.metadata.size()));
  for (const auto& [k, v] : f.metadata) {
    lua_pushlstring(L, v.data(), v.size());
    lua_setfield(L, -2, k.c_str());
  }
  return 2;
}

int l_save_safetensors(lua_State* L) {
  const auto named = check_named_tensors(L, 1);
  const std::string path = check_path(L, 2);
  const Options o(L, 3, {"metadata"});
  const auto metadata = check_metadata(L, lua_gettop(L) >= 3 && !lua_isnil(L, 3) ? 3 : 0);
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  std::vector<NodeRef> xs;
  std::vector<io::SafetensorsSpec> specs;
  for (const auto& [name, x] : named) {
    xs.push_back(x);
    specs.push_back({name, x->dtype, x->shape});
  }
  const std::vector<NodeRef> parts = computed_for_save(L, xs);
  const io::SafetensorsLayout layout = io::safetensors_layout(specs, metadata);
  auto create = [&](const std::string& tmp) {
    io::create_safetensors(tmp, layout);
    std::vector<io::NpyHeader> headers;
    for (const io::SafetensorsEntry& e : layout.tensors) headers.push_back(e.header);
    return headers;
  };
  io::save_parts_sharded(s, path, create, parts);
  return 0;
}

}  // namespace tapestry::lua
