// Declarations of every Lua binding; lang/api*.cpp list them with their docs.
//   { "tp.zeros", ApiKind::Function, "create", "tp.zeros(shape [,opts])", "...", l_zeros }
// Each binding may throw tapestry::Error; push_guarded turns that into a Lua error.
#pragma once

#include "engine/ir/op.hpp"

struct lua_State;

namespace tapestry::lua {

// create (create_lua.cpp)
int l_tensor(lua_State* L);
int l_zeros(lua_State* L);
int l_ones(lua_State* L);
int l_full(lua_State* L);
int l_eye(lua_State* L);
int l_arange(lua_State* L);
int l_linspace(lua_State* L);
int l_rand(lua_State* L);
int l_logspace(lua_State* L);
int l_randint(lua_State* L);
int l_zeros_like(lua_State* L);
int l_ones_like(lua_State* L);
int l_full_like(lua_State* L);
int l_rand_like(lua_State* L);
int l_randn_like(lua_State* L);
int l_randn(lua_State* L);
int l_seed(lua_State* L);

// declared properties (properties_lua.cpp)
int l_symmetric(lua_State* L);
int l_antisymmetric(lua_State* L);
int l_hermitian(lua_State* L);
int l_declare(lua_State* L);
int l_dense(lua_State* L);
int l_nbytes(lua_State* L);
int l_properties(lua_State* L);

// maps (map_lua.cpp)
template <Op op> int l_unary(lua_State* L);
template <Op op> int l_binary(lua_State* L);
int l_where(lua_State* L);
int l_cast(lua_State* L);
int l_clamp(lua_State* L);
int l_result_type(lua_State* L);

// reductions and contractions (reduce_lua.cpp)
template <Op op> int l_reduce(lua_State* L);  // sum prod max min all any
int l_mean(lua_State* L);
int l_var(lua_State* L);
int l_std(lua_State* L);
int l_norm(lua_State* L);
template <Op op> int l_argreduce(lua_State* L);
int l_matmul(lua_State* L);

// contractions by index letters (contract_lua.cpp)
int l_einsum(lua_State* L);
int l_einsum_path(lua_State* L);
int l_tensordot(lua_State* L);
int l_outer(lua_State* L);

// shape (shape_lua.cpp)
int l_reshape(lua_State* L);
int l_permute(lua_State* L);
int l_transpose(lua_State* L);
int l_t(lua_State* L);
int l_expand(lua_State* L);
int l_squeeze(lua_State* L);
int l_unsqueeze(lua_State* L);
int l_flatten(lua_State* L);
int l_cat(lua_State* L);
int l_stack(lua_State* L);
int l_narrow(lua_State* L);
int l_select(lua_State* L);
int l_index(lua_State* L);     // x[{...}]
int l_newindex(lua_State* L);  // tp.env.w[{...}] = y

// windows and padding (window_lua.cpp)
int l_pad(lua_State* L);
int l_roll(lua_State* L);
int l_flip(lua_State* L);
int l_diag(lua_State* L);
int l_diagonal(lua_State* L);
int l_tril(lua_State* L);
int l_triu(lua_State* L);
int l_matrix_trace(lua_State* L);
int l_meshgrid(lua_State* L);
int l_stencil(lua_State* L);
int l_conv2d(lua_State* L);
template <Op op> int l_pool2d(lua_State* L);  // maxpool2d avgpool2d

// sorting and scans (line_lua.cpp)
int l_sort(lua_State* L);
int l_argsort(lua_State* L);
int l_topk(lua_State* L);
template <Op op> int l_scan(lua_State* L);  // cumsum cumprod cummax cummin logcumsumexp
int l_searchsorted(lua_State* L);
int l_unique(lua_State* L);

// tp.fft (fft_lua.cpp)
int l_fft_fft(lua_State* L);
int l_fft_ifft(lua_State* L);
int l_fft_rfft(lua_State* L);
int l_fft_irfft(lua_State* L);
int l_fft_fft2(lua_State* L);
int l_fft_ifft2(lua_State* L);
int l_fft_fftn(lua_State* L);
int l_fft_ifftn(lua_State* L);
int l_fft_fftfreq(lua_State* L);
int l_fft_rfftfreq(lua_State* L);
int l_fft_fftshift(lua_State* L);
int l_fft_ifftshift(lua_State* L);

// tp.linalg (linalg_lua.cpp)
int l_linalg_solve(lua_State* L);
int l_linalg_cholesky(lua_State* L);
int l_linalg_inv(lua_State* L);
int l_linalg_det(lua_State* L);
int l_linalg_slogdet(lua_State* L);
int l_linalg_qr(lua_State* L);
int l_linalg_svd(lua_State* L);
int l_linalg_eigh(lua_State* L);
int l_linalg_eigvalsh(lua_State* L);

// indexing (index_lua.cpp)
int l_gather(lua_State* L);
template <Op op> int l_scatter(lua_State* L);  // scatter scatter_add
int l_index_select(lua_State* L);
int l_take(lua_State* L);
int l_where_indices(lua_State* L);  // tp.where(cond)

// gradients (grad_lua.cpp)
int l_grad(lua_State* L);
int l_detach(lua_State* L);

// tensor metadata and observation (observe_lua.cpp)
int l_dim(lua_State* L);
int l_size(lua_State* L);
int l_numel(lua_State* L);
int l_item(lua_State* L);
int l_totable(lua_State* L);
int l_eval(lua_State* L);
int l_release(lua_State* L);
int l_len(lua_State* L);
int l_stats(lua_State* L);
int l_clock(lua_State* L);
int l_tensors(lua_State* L);

// printing (print_lua.cpp)
int l_tostring(lua_State* L);
int l_set_printoptions(lua_State* L);
int l_get_printoptions(lua_State* L);

// tracing (trace_lua.cpp)
int l_trace(lua_State* L);

// files (io_lua.cpp)
int l_load(lua_State* L);
int l_save(lua_State* L);
int l_save_env(lua_State* L);
int l_load_env(lua_State* L);
int l_checkpoint(lua_State* L);
int l_place(lua_State* L);
// CSV and TSV files (csv_lua.cpp)
int l_load_csv(lua_State* L);
int l_save_csv(lua_State* L);
// HDF5 files (hdf5_lua.cpp)
int l_load_hdf5(lua_State* L);
int l_save_hdf5(lua_State* L);
// zarr v2 arrays (zarr_lua.cpp)
int l_load_zarr(lua_State* L);
int l_save_zarr(lua_State* L);
// SQLite databases (sql_lua.cpp)
int l_load_sql(lua_State* L);
int l_save_sql(lua_State* L);
// safetensors files (safetensors_lua.cpp)
int l_load_safetensors(lua_State* L);
int l_save_safetensors(lua_State* L);

// plans and layouts (plan_lua.cpp)
int l_plan(lua_State* L);
int l_explain(lua_State* L);
int l_dot(lua_State* L);
int l_layout(lua_State* L);
int l_constrain(lua_State* L);
int l_replicated(lua_State* L);
int l_split(lua_State* L);
int l_grid(lua_State* L);
int l_layout_map(lua_State* L);

// the mesh (mesh_lua.cpp)
int l_mesh(lua_State* L);

}  // namespace tapestry::lua
