// tp.fft: numpy.fft's functions over build::fft (FFTW3 underneath).
//   local X = tp.fft.fft(x)                          -- along the last dim
//   local y = tp.fft.irfft(tp.fft.rfft(x, {dim = 1}), {dim = 1, n = x.shape[1]})
//   local f = tp.fft.fftshift(tp.fft.fftfreq(8))
// Dims are 1-based (negative from the end), as everywhere in tp; options as numpy's arguments.
#include <lauxlib.h>
#include <lua.h>

#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/tensor_lua.hpp"

namespace tapestry::lua {

namespace {

build::FftNorm check_norm(const Options& o) {
  const std::optional<std::string> s = o.string("norm");
  if (!s || *s == "backward") return build::FftNorm::Backward;
  if (*s == "ortho") return build::FftNorm::Ortho;
  if (*s == "forward") return build::FftNorm::Forward;
  user_error("opts.norm must be 'backward', 'ortho' or 'forward', got '", *s, "'");
}

int to_dim(int64_t d, int rank, const char* what) {
  user_check(d != 0 && d >= -rank && d <= rank, what, " ", d, " is out of range for a tensor of ", rank,
             " dims (1-based, negative from the end)");
  return static_cast<int>(d > 0 ? d - 1 : d + rank);
}

// A sequence of integers in opts[key], or nothing.
std::optional<std::vector<int64_t>> int_list(lua_State* L, int opts, const char* key) {
  if (opts == 0) return std::nullopt;
  lua_getfield(L, opts, key);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return std::nullopt;
  }
  if (lua_type(L, -1) != LUA_TTABLE) {
    lua_pop(L, 1);
    arg_error(opts, cat_str("option '", key, "' must be a sequence of integers"));
  }
  std::vector<int64_t> v;
  const lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, -1, i);
    int isint = 0;
    const lua_Integer x = lua_tointegerx(L, -1, &isint);
    lua_pop(L, 1);
    if (!isint) {
      lua_pop(L, 1);
      arg_error(opts, cat_str("option '", key, "' must be a sequence of integers"));
    }
    v.push_back(x);
  }
  lua_pop(L, 1);
  return v;
}

int opts_index(lua_State* L, int arg) { return lua_istable(L, arg) && !is_tensor(L, arg) ? arg : 0; }

// fft, ifft, rfft, irfft: one dim (opts.dim, default the last), opts.n, opts.norm.
template <int Kind> int l_fft1(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const Options o(L, 2, {"n", "dim", "norm"});
  const int rank = static_cast<int>(x->shape.size());
  user_check(rank >= 1, "x must have at least 1 dimension, got a scalar {}");
  const int dim = to_dim(o.integer("dim").value_or(-1), rank, "opts.dim");
  const std::optional<int64_t> n = o.integer("n");
  const build::FftNorm norm = check_norm(o);
  NodeRef r;
  if constexpr (Kind == 0) r = build::fft(x, dim, n, norm, false);
  else if constexpr (Kind == 1) r = build::fft(x, dim, n, norm, true);
  else if constexpr (Kind == 2) r = build::rfft(x, dim, n, norm);
  else r = build::irfft(x, dim, n, norm);
  push_tensor(L, r);
  return 1;
}

// fft2, ifft2 (default dims the last two), fftn, ifftn (default all): opts.dims, opts.s, opts.norm.
template <bool Inverse, bool Two> int l_fftn(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const Options o(L, 2, {"s", "dims", "norm"});
  const int rank = static_cast<int>(x->shape.size());
  user_check(rank >= (Two ? 2 : 1), "x must have at least ", Two ? 2 : 1, " dimensions, got shape ",
             shape_str(x->shape));
  const int opts = opts_index(L, 2);
  std::vector<int64_t> dims1;
  if (auto d = int_list(L, opts, "dims")) {
    dims1 = *d;
  } else {
    const int first = Two ? rank - 2 : 0;
    for (int k = first; k < rank; ++k) dims1.push_back(k + 1);
  }
  const std::optional<std::vector<int64_t>> s = int_list(L, opts, "s");
  user_check(!s || s->size() == dims1.size(), "opts.s has ", s ? s->size() : 0, " sizes for ", dims1.size(),
             " dims");
  const build::FftNorm norm = check_norm(o);
  NodeRef r = x;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < dims1.size(); ++i) {
    const int d = to_dim(dims1[i], rank, "a dim of opts.dims");
    user_check(!seen[d], "dim ", d + 1, " is listed twice in opts.dims");
    seen[d] = true;
    r = build::fft(r, d, s ? std::optional<int64_t>((*s)[i]) : std::nullopt, norm, Inverse);
  }
  push_tensor(L, r);
  return 1;
}

}  // namespace

int l_fft_fft(lua_State* L) { return l_fft1<0>(L); }
int l_fft_ifft(lua_State* L) { return l_fft1<1>(L); }
int l_fft_rfft(lua_State* L) { return l_fft1<2>(L); }
int l_fft_irfft(lua_State* L) { return l_fft1<3>(L); }
int l_fft_fft2(lua_State* L) { return l_fftn<false, true>(L); }
int l_fft_ifft2(lua_State* L) { return l_fftn<true, true>(L); }
int l_fft_fftn(lua_State* L) { return l_fftn<false, false>(L); }
int l_fft_ifftn(lua_State* L) { return l_fftn<true, false>(L); }

template <bool Half> int l_freq(lua_State* L) {
  const int64_t n = check_int(L, 1);
  const double d = lua_isnoneornil(L, 2) ? 1.0 : check_number(L, 2);
  push_tensor(L, build::fftfreq(n, d, Half));
  return 1;
}
int l_fft_fftfreq(lua_State* L) { return l_freq<false>(L); }
int l_fft_rfftfreq(lua_State* L) { return l_freq<true>(L); }

template <bool Inverse> int l_shift(lua_State* L) {
  const NodeRef x = check_tensor_like(L, 1);
  const int rank = static_cast<int>(x->shape.size());
  std::vector<int> dims;
  if (lua_isnoneornil(L, 2)) {
    for (int d = 0; d < rank; ++d) dims.push_back(d);
  } else {
    dims = check_dims(L, 2, rank);
  }
  push_tensor(L, build::fftshift(x, dims, Inverse));
  return 1;
}
int l_fft_fftshift(lua_State* L) { return l_shift<false>(L); }
int l_fft_ifftshift(lua_State* L) { return l_shift<true>(L); }

}  // namespace tapestry::lua
