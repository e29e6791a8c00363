#include "lang/mesh_lua.hpp"

#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/plan/planner.hpp"
#include "engine/session/session.hpp"
#include "kernels/cpu/kernels.hpp"
#include "lang/bindings.hpp"
#include "lang/lua_args.hpp"
#include "lang/state_context.hpp"

namespace tapestry {

namespace {

// opts.mesh: a rank count, or {ranks=, ranks_per_node=, flops=, bandwidth=, latency=,
// network_bandwidth=, network_latency=, memory=}.
// The axes of a mesh description made by tp.mesh{...}: {axes = {{name=, size=, bandwidth=,
// latency=}, ...}, flops_per_rank=, memory_per_rank=} (outermost axis first).
bool has_axes(lua_State* L, int t) {
  lua_getfield(L, t, "axes");
  const bool yes = lua_type(L, -1) == LUA_TTABLE;
  lua_pop(L, 1);
  return yes;
}

plan::Mesh mesh_of_description(lua_State* L, int t) {
  std::vector<plan::MeshAxis> axes;
  lua_getfield(L, t, "axes");
  const int a = lua_gettop(L);
  user_check(lua_type(L, a) == LUA_TTABLE,
             "option 'mesh': a mesh description needs 'axes' (make it with tp.mesh{...})");
  const lua_Integer n = luaL_len(L, a);
  user_check(n >= 1 && n <= 8, "option 'mesh': a mesh has 1..8 axes, got ", n);
  int64_t ranks = 1;
  for (lua_Integer i = 1; i <= n; ++i) {
    lua_geti(L, a, i);
    user_check(lua_type(L, -1) == LUA_TTABLE, "option 'mesh': axis ", i, " is not a table");
    plan::MeshAxis ax;
    lua_getfield(L, -1, "name");
    ax.name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : cat_str("axis", i);
    lua_getfield(L, -2, "size");
    const lua_Integer size = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    lua_getfield(L, -3, "bandwidth");
    ax.link.bandwidth = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0;
    lua_getfield(L, -4, "latency");
    ax.link.latency = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : -1;
    lua_pop(L, 5);
    user_check(size >= 1 && size <= (1 << 20), "option 'mesh': axis '", ax.name,
               "' needs a size in 1..2^20, got ", size);
    user_check(ax.link.bandwidth > 0 && ax.link.latency >= 0, "option 'mesh': axis '", ax.name,
               "' needs a positive bandwidth and a latency >= 0");
    ax.size = static_cast<int>(size);
    ranks *= size;
    user_check(ranks <= (1 << 20), "option 'mesh': the axes multiply to more than 2^20 ranks");
    axes.push_back(std::move(ax));
  }
  lua_pop(L, 1);
  plan::Mesh m = plan::Mesh::of_axes(std::move(axes));
  lua_getfield(L, t, "flops_per_rank");
  if (lua_isnumber(L, -1)) m.flops_per_s = lua_tonumber(L, -1);
  lua_getfield(L, t, "memory_per_rank");
  if (lua_isnumber(L, -1)) m.mem_bytes_per_rank = lua_tonumber(L, -1);
  lua_pop(L, 2);
  user_check(m.flops_per_s > 0 && m.mem_bytes_per_rank > 0,
             "option 'mesh': rates and sizes must be positive");
  return m;
}

// tp.mesh{nodes = 16, gpus = 8 [,order=] [,links=] [,flops=] [,memory=]}: a modelled mesh of
// named axes, for tp.plan's {mesh = ...}.
int new_mesh(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  static const std::vector<std::string> kOuterFirst = {"racks", "nodes", "hosts",  "sockets",
                                                       "ranks", "gpus",  "devices"};
  std::vector<std::pair<std::string, int64_t>> axes;
  lua_pushnil(L);
  while (lua_next(L, 1) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING)
      arg_error(1, "tp.mesh takes named axes, e.g. tp.mesh{nodes = 16, gpus = 8}");
    const std::string key = lua_tostring(L, -2);
    if (key != "order" && key != "links" && key != "flops" && key != "memory") {
      const bool ok = lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1 && lua_tointeger(L, -1) <= (1 << 20);
      if (!ok) user_error("axis '", key, "' needs a size in 1..2^20, got ", luaL_tolstring(L, -1, nullptr));
      axes.push_back({key, lua_tointeger(L, -1)});
    }
    lua_pop(L, 1);
  }
  user_check(!axes.empty() && axes.size() <= 8, "needs 1..8 named axes, e.g. tp.mesh{nodes = 16, gpus = 8}");
  // Outermost first: the order given, else nodes before ranks before gpus (the usual nesting),
  // unknown names after them in alphabetical order.
  auto rank_of = [&](const std::string& name) {
    auto it = std::find(kOuterFirst.begin(), kOuterFirst.end(), name);
    return it - kOuterFirst.begin();
  };
  std::sort(axes.begin(), axes.end(), [&](const auto& a, const auto& b) {
    return rank_of(a.first) != rank_of(b.first) ? rank_of(a.first) < rank_of(b.first) : a.first < b.first;
  });
  lua_getfield(L, 1, "order");
  if (!lua_isnil(L, -1)) {
    user_check(lua_type(L, -1) == LUA_TTABLE && luaL_len(L, -1) == static_cast<lua_Integer>(axes.size()),
               "'order' must list every axis once, outermost first");
    std::vector<std::pair<std::string, int64_t>> ordered;
    for (lua_Integer i = 1; i <= static_cast<lua_Integer>(axes.size()); ++i) {
      lua_geti(L, -1, i);
      const std::string name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
      lua_pop(L, 1);
      auto it = std::find_if(axes.begin(), axes.end(), [&](const auto& a) { return a.first == name; });
      user_check(it != axes.end() && std::none_of(ordered.begin(), ordered.end(),
                                                  [&](const auto& a) { return a.first == name; }),
                 "'order' names '", name, "', which is not an axis or is listed twice");
      ordered.push_back(*it);
    }
    axes = std::move(ordered);
  }
  lua_pop(L, 1);
  std::vector<plan::MeshAxis> out;
  for (const auto& [name, size] : axes) {
    // A network between nodes, NVLink-class links between GPUs, shared memory otherwise.
    plan::Link link{5e9, 0.5e-6};
    if (name == "racks" || name == "nodes" || name == "hosts") link = {25e9, 2e-6};
    if (name == "gpus" || name == "devices") link = {300e9, 1e-6};
    lua_getfield(L, 1, "links");
    if (lua_type(L, -1) == LUA_TTABLE) {
      lua_getfield(L, -1, name.c_str());
      if (lua_type(L, -1) == LUA_TTABLE) {
        lua_getfield(L, -1, "bandwidth");
        if (lua_isnumber(L, -1)) link.bandwidth = lua_tonumber(L, -1);
        lua_getfield(L, -2, "latency");
        if (lua_isnumber(L, -1)) link.latency = lua_tonumber(L, -1);
        lua_pop(L, 2);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    user_check(link.bandwidth > 0 && link.latency >= 0, "the link of axis '", name,
               "' needs a positive bandwidth and a latency >= 0");
    out.push_back({name, static_cast<int>(size), link});
  }
  int64_t ranks = 1;
  for (const plan::MeshAxis& a : out) ranks *= a.size;
  user_check(ranks <= (1 << 20), "the axes multiply to ", ranks, " ranks, more than 2^20");
  plan::Mesh m = plan::Mesh::of_axes(std::move(out));
  lua_getfield(L, 1, "flops");
  if (lua_isnumber(L, -1)) m.flops_per_s = lua_tonumber(L, -1);
  lua_getfield(L, 1, "memory");
  if (lua_isnumber(L, -1)) m.mem_bytes_per_rank = lua_tonumber(L, -1);
  lua_pop(L, 2);
  user_check(m.flops_per_s > 0 && m.mem_bytes_per_rank > 0, "flops and memory must be positive");
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, m.ranks);
  lua_setfield(L, -2, "ranks");
  lua_createtable(L, static_cast<int>(m.axes.size()), 0);
  for (size_t i = 0; i < m.axes.size(); ++i) {
    lua_createtable(L, 0, 4);
    lua_pushstring(L, m.axes[i].name.c_str());
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, m.axes[i].size);
    lua_setfield(L, -2, "size");
    lua_pushnumber(L, m.axes[i].link.bandwidth);
    lua_setfield(L, -2, "bandwidth");
    lua_pushnumber(L, m.axes[i].link.latency);
    lua_setfield(L, -2, "latency");
    lua_seti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  lua_setfield(L, -2, "axes");
  lua_pushnumber(L, m.flops_per_s);
  lua_setfield(L, -2, "flops_per_rank");
  lua_pushnumber(L, m.mem_bytes_per_rank);
  lua_setfield(L, -2, "memory_per_rank");
  lua_pushstring(L, plan::to_string(m).c_str());
  lua_setfield(L, -2, "description");
  return 1;
}

}  // namespace

plan::Mesh read_mesh(lua_State* L, int opts_idx) {
  plan::Mesh m = session_of(L).mesh();
  if (opts_idx == 0) return m;
  lua_getfield(L, opts_idx, "mesh");
  const int t = lua_gettop(L);
  if (lua_type(L, t) == LUA_TNUMBER) {
    const int64_t n = check_int(L, t);
    user_check(n >= 1 && n <= 1 << 20, "mesh must have 1..2^20 ranks, got ", n);
    // A one-axis mesh: up to 8 ranks this machine's (shared memory), more a modelled cluster
    // whose ranks all talk over the network.
    m = n <= 8 ? plan::Mesh::this_machine(static_cast<int>(n))
               : plan::Mesh::of_axes({{"ranks", static_cast<int>(n), plan::Mesh{}.inter}});
  } else if (lua_type(L, t) == LUA_TTABLE && has_axes(L, t)) {
    m = mesh_of_description(L, t);
  } else if (lua_type(L, t) == LUA_TTABLE) {
    Options o(L, t,
              {"ranks", "ranks_per_node", "flops", "memory", "bandwidth", "latency", "network_bandwidth",
               "network_latency"});
    const int64_t n = o.integer("ranks").value_or(m.ranks);
    user_check(n >= 1 && n <= 1 << 20, "mesh.ranks must be in 1..2^20, got ", n);
    m = plan::Mesh::modelled(static_cast<int>(n));
    if (auto v = o.integer("ranks_per_node")) m.ranks_per_node = static_cast<int>(std::max<int64_t>(1, *v));
    if (auto v = o.number("flops")) m.flops_per_s = *v;
    if (auto v = o.number("memory")) m.mem_bytes_per_rank = *v;
    if (auto v = o.number("bandwidth")) m.intra.bandwidth = *v;
    if (auto v = o.number("latency")) m.intra.latency = *v;
    if (auto v = o.number("network_bandwidth")) m.inter.bandwidth = *v;
    if (auto v = o.number("network_latency")) m.inter.latency = *v;
    user_check(
        m.flops_per_s > 0 && m.intra.bandwidth > 0 && m.inter.bandwidth > 0 && m.mem_bytes_per_rank > 0,
        "mesh rates and sizes must be positive");
  } else if (!lua_isnil(L, t)) {
    arg_error(opts_idx, cat_str("option 'mesh' must be a number or a table, got ", luaL_typename(L, t)));
  }
  lua_pop(L, 1);
  return m;
}

namespace lua {

int l_mesh(lua_State* L) {
  if (!lua_isnoneornil(L, 1)) return new_mesh(L);
  Session& s = session_of(L);
  const plan::Mesh& m = s.mesh();
  lua_createtable(L, 0, 8);
  lua_pushinteger(L, m.ranks);
  lua_setfield(L, -2, "ranks");
  // The device the planner models: "cuda" when a GPU was selected (TAPESTRY_DEVICE or found),
  // and `gpu` says which, or why there is none ("none: no CUDA driver (...)").
  const device::Selection& dev = s.device_selection();
  const bool gpu = dev.kind == device::Kind::Cuda;
  lua_pushinteger(L, gpu ? m.devices_per_rank : 0);
  lua_setfield(L, -2, "devices_per_rank");
  lua_pushstring(L, gpu ? "cuda" : dev.kind == device::Kind::Sim ? "sim" : "cpu");
  lua_setfield(L, -2, "device");
  lua_pushstring(L, dev.gpu.c_str());
  lua_setfield(L, -2, "gpu");
  if (gpu) {
    lua_pushinteger(L, dev.index);
    lua_setfield(L, -2, "gpu_index");
    lua_pushnumber(L, device::peak_fp32_flops(dev.info));
    lua_setfield(L, -2, "gpu_fp32_flops");
    lua_pushnumber(L, device::peak_bf16_flops(dev.info));
    lua_setfield(L, -2, "gpu_bf16_flops");
    lua_pushnumber(L, device::peak_hbm_bytes(dev.info));
    lua_setfield(L, -2, "gpu_hbm_bytes_per_s");
  }
  lua_pushstring(L, s.mpi_job_ranks() == m.ranks && m.ranks > 1 ? "mpi"
                    : m.ranks > 1                               ? "loopback (virtual ranks in one process)"
                                                                : "single process");
  lua_setfield(L, -2, "transport");
  // How slices cross between the ranks' devices: device peers (NCCL), or through the host.
  const bool on_mpi = s.mpi_job_ranks() == m.ranks && m.ranks > 1;
  const std::string between = dev.kind == device::Kind::Cpu ? "none"
                              : on_mpi                      ? s.coordinator()->device_transport()
                              : m.ranks > 1                 ? "in-process device copies"
                                                            : "none";
  lua_pushstring(L, between.c_str());
  lua_setfield(L, -2, "device_transport");
  lua_pushnumber(L, m.mem_bytes_per_rank);
  lua_setfield(L, -2, "memory_per_rank");
  lua_pushnumber(L, m.flops_per_s);
  lua_setfield(L, -2, "flops_per_rank");
  lua_pushnumber(L, m.mem_bytes_per_s);
  lua_setfield(L, -2, "memory_bytes_per_s");
  lua_pushnumber(L, m.intra.bandwidth);
  lua_setfield(L, -2, "link_bandwidth");
  lua_pushnumber(L, m.intra.latency);
  lua_setfield(L, -2, "link_latency");
  // Where the planner's rates come from: this machine's measurements (cached per machine,
  // `tapestry --calibrate`), or the documented defaults (TAPESTRY_RATES=builtin).
  const std::optional<MachineRates>& rates = s.rates();
  lua_pushstring(L, rates ? "measured" : "built-in");
  lua_setfield(L, -2, "rates");
  lua_pushstring(L, rates && rates->link_measured ? "measured" : "built-in");
  lua_setfield(L, -2, "link_rates");
  if (rates) {
    lua_pushstring(L, rates->measured_at.c_str());
    lua_setfield(L, -2, "measured_at");
    lua_pushstring(L, rates->key.c_str());
    lua_setfield(L, -2, "machine");
  }
  // The CPU kernels' vector instructions on this rank: "avx512" where the CPU has AVX-512.
  lua_pushstring(L, cpu::isa_name(cpu::isa()));
  lua_setfield(L, -2, "cpu_isa");
  lua_pushstring(L, plan::to_string(m).c_str());
  lua_setfield(L, -2, "description");
  return 1;
}

}  // namespace lua

}  // namespace tapestry
