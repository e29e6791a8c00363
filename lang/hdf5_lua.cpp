// HDF5 files: tp.load_hdf5, tp.save_hdf5 (engine/io/hdf5.hpp).
//   local u, attrs = tp.load_hdf5("sim.h5", "/fields/u")      -- attrs: the dataset's attributes
//   tp.save_hdf5(u * 2, "out.h5", "u", {attrs = {units = "K", step = 10}, chunks = {64, 64}})
// On N ranks each rank reads only its own rows; a contiguous save is written by every rank in
// parallel (its rows, raw, at the dataset's offset), a chunked one by rank 0 through the library.
#include <lauxlib.h>
#include <lua.h>

#include <map>
#include <string>
#include <vector>

#include "engine/io/hdf5.hpp"
#include "engine/io/npy.hpp"
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

void push_attrs(lua_State* L, const std::map<std::string, io::Hdf5Attr>& attrs) {
  lua_createtable(L, 0, static_cast<int>(attrs.size()));
  for (const auto& [k, v] : attrs) {
    if (const std::string* s = std::get_if<std::string>(&v)) {
      lua_pushlstring(L, s->data(), s->size());
    } else {
      const std::vector<double>& n = std::get<std::vector<double>>(v);
      auto push_num = [L](double d) {
        if (d == static_cast<double>(static_cast<lua_Integer>(d)) && d > -9.0e15 && d < 9.0e15)
          lua_pushinteger(L, static_cast<lua_Integer>(d));
        else lua_pushnumber(L, d);
      };
      if (n.size() == 1) {
        push_num(n[0]);
      } else {
        lua_createtable(L, static_cast<int>(n.size()), 0);
        for (size_t i = 0; i < n.size(); ++i) {
          push_num(n[i]);
          lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
        }
      }
    }
    lua_setfield(L, -2, k.c_str());
  }
}

// opts.attrs: name -> number, string or sequence of numbers.
std::map<std::string, io::Hdf5Attr> check_attrs(lua_State* L, int opts) {
  std::map<std::string, io::Hdf5Attr> out;
  if (lua_type(L, opts) != LUA_TTABLE) return out;
  lua_getfield(L, opts, "attrs");
  const int t = lua_gettop(L);
  if (!lua_isnil(L, t)) {
    if (lua_type(L, t) != LUA_TTABLE) arg_error(opts, "option 'attrs' must be a table");
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
      if (lua_type(L, -2) != LUA_TSTRING) arg_error(opts, "option 'attrs' must have string keys");
      const std::string k = lua_tostring(L, -2);
      if (lua_type(L, -1) == LUA_TSTRING) {
        out[k] = std::string(lua_tostring(L, -1));
      } else if (lua_type(L, -1) == LUA_TNUMBER) {
        out[k] = std::vector<double>{lua_tonumber(L, -1)};
      } else if (lua_type(L, -1) == LUA_TTABLE && luaL_len(L, -1) > 0) {
        std::vector<double> v;
        for (lua_Integer i = 1, n = luaL_len(L, -1); i <= n; ++i) {
          lua_rawgeti(L, -1, i);
          if (lua_type(L, -1) != LUA_TNUMBER)
            arg_error(opts,
                      cat_str("attribute '", k, "' must be a number, a string or a sequence of numbers"));
          v.push_back(lua_tonumber(L, -1));
          lua_pop(L, 1);
        }
        out[k] = std::move(v);
      } else {
        arg_error(opts, cat_str("attribute '", k, "' must be a number, a string or a sequence of numbers"));
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return out;
}

// opts.chunks: one positive size per dimension (clamped to the dimension).
std::vector<int64_t> check_chunks(lua_State* L, int opts, const Shape& shape) {
  std::vector<int64_t> out;
  if (lua_type(L, opts) != LUA_TTABLE) return out;
  lua_getfield(L, opts, "chunks");
  if (!lua_isnil(L, -1)) {
    const bool ok =
        lua_type(L, -1) == LUA_TTABLE && luaL_len(L, -1) == static_cast<lua_Integer>(shape.size());
    if (!ok || shape.empty())
      arg_error(opts,
                cat_str("option 'chunks' must give one size per dimension of shape ", shape_str(shape)));
    for (size_t i = 0; i < shape.size(); ++i) {
      lua_rawgeti(L, -1, static_cast<lua_Integer>(i + 1));
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
        arg_error(opts, cat_str("option 'chunks': entry ", i + 1, " is not a positive integer"));
      out.push_back(std::min<int64_t>(lua_tointeger(L, -1), shape[i]));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return out;
}

}  // namespace

int l_load_hdf5(lua_State* L) {
  const std::string path = check_path(L, 1);
  const std::string ds = check_string(L, 2, "dataset name");
  const Options o(L, 3, {"dtype", "name"});
  const std::optional<std::string> name = o.string("name");
  if (name) user_check(is_identifier(*name), "'", *name, "' is not a valid tensor name (use an identifier)");
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  const io::Hdf5Info info = io::read_hdf5_info(path, ds);
  io::NpyHeader h;
  h.dtype = info.dtype;
  h.shape = info.shape;
  h.data_offset = info.raw_offset;
  const bool raw = info.raw_offset >= 0;
  NodeRef n;
  if (s.mesh().ranks > 1) {
    n = io::load_raw_sharded(s, path, {h}, s.mesh().ranks, raw ? std::string() : ds)[0];
  } else {
    auto v = Value::alloc(info.dtype, info.shape);
    if (raw) io::read_npy_box(path, h, poly::Box::of_shape(info.shape), v->view());
    else io::read_hdf5_box(path, ds, poly::Box::of_shape(info.shape), v->view());
    n = make_source(std::move(v), info.shape, info.dtype);
  }
  if (const std::optional<DType> dt = o.dtype(); dt && *dt != n->dtype) n = build::cast(n, *dt);
  if (name) s.env().bind(*name, n);
  push_tensor(L, std::move(n), name.value_or(""));
  push_attrs(L, info.attrs);
  return 2;
}

int l_save_hdf5(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const std::string path = check_path(L, 2);
  const std::string ds = check_string(L, 3, "dataset name");
  user_check(!ds.empty() && ds != "/", "the dataset name is empty");
  const Options o(L, 4, {"attrs", "chunks"});
  const auto attrs = check_attrs(L, 4);
  const std::vector<int64_t> chunks = check_chunks(L, 4, x->shape);
  Session& s = session_of(L);
  const TelemetryScope in(s.telemetry());
  if (!chunks.empty()) {  // through the library, by this process: serial HDF5 has one writer
    observe(L, {x});
    io::save_hdf5(path, ds, x->value->view(), attrs, chunks);
    return 0;
  }
  const std::vector<NodeRef> parts = computed_for_save(L, {x});
  auto create = [&](const std::string& tmp) {
    io::NpyHeader h;
    h.dtype = x->dtype;
    h.shape = x->shape;
    h.data_offset = io::create_hdf5(tmp, ds, x->dtype, x->shape, attrs, {});
    return std::vector<io::NpyHeader>{h};
  };
  io::save_parts_sharded(s, path, create, parts);
  return 0;
}

}  // namespace tapestry::lua
