// Creators: tp.tensor, zeros, ones, full, eye, arange, linspace, logspace, rand, randn, randint,
// the *_like forms, seed.
#include <lauxlib.h>
#include <lua.h>

#include <cmath>

#include "engine/ir/build/packed.hpp"
#include "engine/session/session.hpp"
#include "lang/bindings.hpp"
#include "lang/convert.hpp"
#include "lang/lua_args.hpp"
#include "lang/place_lua.hpp"
#include "lang/properties_lua.hpp"
#include "lang/state_context.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

// Options shared by creators; binds opts.name in the environment.
struct CreateOpts {
  std::optional<DType> given;  // opts.dtype, if any
  DType dtype = kDefaultFloat;
  std::optional<std::string> name;
  std::optional<int64_t> seed;
  std::vector<SymmetryGroup> symmetry;  // opts.symmetry (properties_lua.hpp)
  int opts = 0;                         // the options table's index (tiles, nonzero), 0: none
  bool disk = false;                    // opts.storage == "disk": made, then put on disk (place_lua.hpp)
};

// opts.storage: "memory" (the default) or "disk". A declared tensor is kept packed in memory
// (docs/properties.md); its file would have to hold the dense tensor, so the two do not mix.
bool read_storage(const Options& o) {
  const std::optional<std::string> storage = o.string("storage");
  if (!storage) return false;
  user_check(*storage == "memory" || *storage == "disk", "storage must be \"memory\" or \"disk\", got ",
             quoted(*storage));
  const bool disk = *storage == "disk";
  user_check(!disk || !(o.has("symmetry") || o.has("tiles") || o.has("nonzero")),
             "storage = \"disk\" cannot be combined with symmetry, tiles or nonzero (a declared tensor is "
             "kept packed in memory; use tp.place on it to put it on disk dense)");
  return disk;
}

CreateOpts read_opts(lua_State* L, int arg, bool random = false) {
  Options o =
      random ? Options(L, arg, {"dtype", "name", "layout", "seed", "symmetry", "tiles", "nonzero", "storage"})
             : Options(L, arg, {"dtype", "name", "layout", "symmetry", "tiles", "nonzero", "storage"});
  user_check(!o.has("layout"),
             "option 'layout' needs the sharding planner, which this build does "
             "not have yet (single rank)");
  CreateOpts c;
  c.given = o.dtype();
  if (c.given) c.dtype = *c.given;
  c.name = o.string("name");
  if (random) c.seed = o.integer("seed");
  c.symmetry = read_symmetry(L, lua_istable(L, arg) ? arg : 0);
  c.opts = lua_istable(L, arg) ? arg : 0;
  c.disk = read_storage(o);
  return c;
}

int finish(lua_State* L, NodeRef n, const CreateOpts& c, Creator kind = Creator::Data, double value = 0) {
  n = with_properties(L, c.opts, n, c.symmetry, kind, value);
  if (c.disk) {
    // Computed where it will be written from and written before anything is bound: a failed
    // write binds nothing.
    const std::string label =
        c.name ? "tp.env." + *c.name
               : cat_str("the new ", dtype_name(n->dtype), " ", shape_str(n->shape), " tensor");
    n = put_on_disk(
        L, n, label,
        c.name ? cat_str("nothing was made, and tp.env.", *c.name, " is as it was") : "nothing was made");
  }
  if (c.name) {
    session_of(L).env().bind(*c.name, build::stored_form(n));  // declared: kept packed
    push_tensor(L, std::move(n), *c.name);
  } else {
    push_tensor(L, std::move(n));
  }
  return 1;
}

int fill(lua_State* L, double v) {
  const Shape s = check_shape_arg(L, 1);
  const CreateOpts c = read_opts(L, 2);
  return finish(L, build::full(s, v, c.dtype), c, Creator::Constant, v);
}

// Where the options table sits when trailing arguments are optional.
int opts_index(lua_State* L, int first_optional, int last) {
  for (int i = first_optional; i <= last; ++i)
    if (lua_type(L, i) == LUA_TTABLE) return i;
  return last + 1;
}

}  // namespace

int l_tensor(lua_State* L) {
  if (lua_isnone(L, 1)) type_error(L, 1, "table or number");
  if (is_tensor(L, 1)) {  // tp.tensor(x) of a Tensor: a cast/copy of it
    const CreateOpts c = read_opts(L, 2);
    const NodeRef x = check_tensor(L, 1);
    return finish(L, build::cast(x, c.given.value_or(x->dtype)), c);
  }
  const int t = lua_type(L, 1);
  if (t != LUA_TTABLE && t != LUA_TNUMBER && t != LUA_TBOOLEAN) type_error(L, 1, "table or number");
  const CreateOpts c = read_opts(L, 2);
  return finish(L, tensor_from_lua(L, 1, c.given), c);
}

int l_zeros(lua_State* L) { return fill(L, 0); }
int l_ones(lua_State* L) { return fill(L, 1); }

int l_full(lua_State* L) {
  const Shape s = check_shape_arg(L, 1);
  const CreateOpts c = read_opts(L, 3);
  NodeRef n;
  const double v = lua_type(L, 2) == LUA_TBOOLEAN ? lua_toboolean(L, 2) : lua_tonumber(L, 2);
  if (lua_type(L, 2) == LUA_TBOOLEAN) {
    n = build::full_int(s, lua_toboolean(L, 2), c.given.value_or(DType::Bool));
  } else if (lua_isinteger(L, 2)) {
    n = build::full_int(s, lua_tointeger(L, 2), c.dtype);
  } else {
    n = build::full(s, check_number(L, 2), c.dtype);
  }
  return finish(L, n, c, Creator::Constant, v);
}

int l_eye(lua_State* L) {
  const int64_t n = check_int(L, 1);
  const int oi = opts_index(L, 2, 2);
  const int64_t m = (oi == 2 || lua_isnoneornil(L, 2)) ? n : check_int(L, 2);
  const CreateOpts c = read_opts(L, oi);
  return finish(L, build::eye(n, m, c.dtype), c, Creator::Eye);
}

int l_arange(lua_State* L) {
  const double first = check_number(L, 1);
  const double last = check_number(L, 2);
  const int oi = opts_index(L, 3, 3);
  const double step = (oi == 3 || lua_isnoneornil(L, 3)) ? 1.0 : check_number(L, 3);
  const CreateOpts c = read_opts(L, oi);
  // Lua integers give an exact integer range (math.maxinteger is not a double).
  const bool ints =
      lua_isinteger(L, 1) && lua_isinteger(L, 2) && (oi == 3 || lua_isnoneornil(L, 3) || lua_isinteger(L, 3));
  if (ints && is_int(c.dtype)) {
    const int64_t istep = (oi == 3 || lua_isnoneornil(L, 3)) ? 1 : lua_tointeger(L, 3);
    return finish(L, build::arange_int(lua_tointeger(L, 1), lua_tointeger(L, 2), istep, c.dtype), c);
  }
  return finish(L, build::arange(first, last, step, c.dtype), c);
}

int l_linspace(lua_State* L) {
  const double a = check_number(L, 1);
  const double b = check_number(L, 2);
  const int64_t n = check_int(L, 3);
  const CreateOpts c = read_opts(L, 4);
  return finish(L, build::linspace(a, b, n, c.dtype), c);
}

static int random(lua_State* L, bool normal) {
  const Shape s = check_shape_arg(L, 1);
  const CreateOpts c = read_opts(L, 2, true);
  const uint64_t seed = c.seed ? static_cast<uint64_t>(*c.seed) : session_of(L).random_seed()++;
  // A complex dtype draws both parts (docs/dtypes.md); with tp.hermitian{...} it is mirrored.
  NodeRef n = is_complex(c.dtype) ? build::complex_random(normal, s, seed, c.dtype)
              : normal            ? build::randn(s, seed, c.dtype)
                                  : build::rand(s, seed, c.dtype);
  return finish(L, std::move(n), c, Creator::Random);
}
int l_rand(lua_State* L) { return random(L, false); }
int l_randn(lua_State* L) { return random(L, true); }

int l_logspace(lua_State* L) {
  const double a = check_number(L, 1);
  const double b = check_number(L, 2);
  const int64_t n = check_int(L, 3);
  Options o(L, 4, {"dtype", "name", "base", "storage"});
  CreateOpts c;
  c.dtype = o.dtype().value_or(kDefaultFloat);
  c.name = o.string("name");
  c.disk = read_storage(o);
  return finish(L, build::logspace(a, b, n, o.number("base").value_or(10.0), c.dtype), c);
}

// tp.randint(lo, hi, shape [,opts]): i64 by default.
int l_randint(lua_State* L) {
  const int64_t lo = check_int(L, 1);
  const int64_t hi = check_int(L, 2);
  const Shape s = check_shape_arg(L, 3);
  const CreateOpts c = read_opts(L, 4, true);
  const uint64_t seed = c.seed ? static_cast<uint64_t>(*c.seed) : session_of(L).random_seed()++;
  return finish(L, build::randint(lo, hi, s, seed, c.given.value_or(DType::I64)), c);
}

// The *_like creators: x's shape, and x's dtype unless opts.dtype.
namespace {
int like(lua_State* L, int opts_arg, bool random, auto make) {
  const NodeRef x = check_tensor(L, 1);
  const CreateOpts c = read_opts(L, opts_arg, random);
  const DType t = c.given.value_or(x->dtype);
  const uint64_t seed = !random ? 0 : c.seed ? static_cast<uint64_t>(*c.seed) : session_of(L).random_seed()++;
  return finish(L, make(x->shape, t, seed), c);
}
}  // namespace

int l_zeros_like(lua_State* L) {
  return like(L, 2, false, [](const Shape& s, DType t, uint64_t) { return build::full_int(s, 0, t); });
}
int l_ones_like(lua_State* L) {
  return like(L, 2, false, [](const Shape& s, DType t, uint64_t) { return build::full_int(s, 1, t); });
}
int l_full_like(lua_State* L) {
  if (lua_type(L, 2) != LUA_TNUMBER && lua_type(L, 2) != LUA_TBOOLEAN) type_error(L, 2, "number or boolean");
  const build::Operand v = check_operand(L, 2);
  return like(L, 3, false,
              [&](const Shape& s, DType t, uint64_t) { return build::broadcast_to(build::scalar(v, t), s); });
}
int l_rand_like(lua_State* L) {
  return like(L, 2, true, [](const Shape& s, DType t, uint64_t seed) { return build::rand(s, seed, t); });
}
int l_randn_like(lua_State* L) {
  return like(L, 2, true, [](const Shape& s, DType t, uint64_t seed) { return build::randn(s, seed, t); });
}

int l_seed(lua_State* L) {
  if (lua_isnoneornil(L, 1)) {
    lua_pushinteger(L, static_cast<lua_Integer>(session_of(L).random_seed()));
    return 1;
  }
  session_of(L).random_seed() = static_cast<uint64_t>(check_int(L, 1));
  return 0;
}

}  // namespace tapestry::lua
