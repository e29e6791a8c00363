// Lua test scripts (tests/lua/ops) through the whole observation path with the simulated
// device as the session's backend: every single-rank observation runs on evaluate_on_device,
// and the scripts' own checks (against their reference values) must still hold.
#include <doctest/doctest.h>

#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/device/sim_backend.hpp"
#include "engine/session/session.hpp"
#include "lang/state.hpp"

using namespace tapestry;

namespace {

// Runs one script as `tapestry path` would (arg[0] = path); returns the error, or "".
std::string run_script(Session& s, const std::string& path) {
  lua_State* L = new_tapestry_state(s);
  lua_newtable(L);
  lua_pushstring(L, path.c_str());
  lua_rawseti(L, -2, 0);
  lua_setglobal(L, "arg");
  std::string err;
  if (luaL_dofile(L, path.c_str()) != LUA_OK) err = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error";
  lua_close(L);
  return err;
}

}  // namespace

TEST_CASE("engine.session.device_lua.lua_ops_scripts_on_the_simulated_device") {
  std::vector<std::string> scripts;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(TAPESTRY_SOURCE_DIR) + "/tests/lua/ops"))
    if (e.path().extension() == ".lua") scripts.push_back(e.path().string());
  std::sort(scripts.begin(), scripts.end());
  REQUIRE(scripts.size() >= 10);
  for (const std::string& path : scripts) {
    CAPTURE(path);
    Config c;
    c.device = "sim";
    Session s(c);
    auto* sim = dynamic_cast<SimDevice*>(s.device());
    REQUIRE(sim != nullptr);
    const std::string err = run_script(s, path);
    CHECK(err == "");
    CHECK(sim->counts().downloads > 0);  // the script's observations ran on the device
    // Nothing on the device but the copies of values the session still holds.
    s.device_copies()->clear();
    CHECK(sim->counts().live_bytes == 0);
  }
}

TEST_CASE("engine.session.device_lua.a_sharded_observation_frees_the_kept_device_copies") {
  Config c;
  c.device = "sim";
  Session s(c);
  CHECK(s.device_copies() == nullptr);  // no device selected yet
  const char* script = "tp.env.w = tp.rand{64, 64}; local y = (tp.env.w * 2):sum():item()";
  lua_State* L = new_tapestry_state(s);
  REQUIRE(luaL_dostring(L, script) == LUA_OK);
  REQUIRE(s.device_copies() != nullptr);
  CHECK(s.device_copies()->size() > 0);  // w's (and the result's) copies kept
  s.set_ranks(3);
  REQUIRE(luaL_dostring(L, "local y = (tp.env.w + 1):sum():item()") == LUA_OK);
  CHECK(s.device_copies()->size() == 0);  // the rank programs got the whole device
  lua_close(L);
}
