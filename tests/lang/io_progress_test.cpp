// The progress of loads and saves, as the shell's bar hears it: a listener on the session's
// telemetry must be told the file bytes each save and each observation of a load expects, and
// hear them done, for every format, on one rank and on 3 virtual ranks.
#include <doctest/doctest.h>

#include <lauxlib.h>
#include <lua.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/session/session.hpp"
#include "engine/telemetry/progress.hpp"
#include "lang/state.hpp"

using namespace tapestry;

namespace {

// The largest total and done an evaluation or save reported.
struct Recorder final : ProgressListener {
  int64_t total = 0, done = 0;
  int scopes = 0;
  void start(int64_t) override { ++scopes; }
  void update(const ProgressState& s) override {
    total = std::max(total, s.io_total);
    done = std::max(done, s.io_done);
  }
  void finish() override {}
  void reset() { total = done = scopes = 0; }
};

void run(lua_State* L, const std::string& code) {
  if (luaL_dostring(L, code.c_str()) != LUA_OK) FAIL(lua_tostring(L, -1));
}

}  // namespace

TEST_CASE("lang.io_progress.loads_and_saves_report_their_bytes") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("tp-progress-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (int ranks : {1, 3}) {
    Session s(Config{});
    s.set_ranks(ranks);
    Recorder rec;
    s.telemetry().progress_listener = &rec;
    lua_State* L = new_tapestry_state(s);
    run(L, "x = tp.arange(1, 3000):reshape{1000, 3}:cast('f32'); d = '" + dir + "'");
    const int64_t bytes = 1000 * 3 * 4;
    const char* saves[] = {
        "tp.save(x, d .. '/p.npy')",
        "tp.save_safetensors({x = x}, d .. '/p.safetensors')",
        "tp.save_hdf5(x, d .. '/p.h5', 'x')",
        "tp.save_hdf5(x, d .. '/k.h5', 'x', {chunks = {64, 3}})",
        "tp.save_zarr(x, d .. '/p.zarr', {chunks = {64, 3}})",
        "tp.save_csv(x, d .. '/p.csv')",
    };
    for (const std::string save : saves) {
      CAPTURE(ranks);
      CAPTURE(save);
      rec.reset();
      run(L, save);
      CHECK(rec.total == bytes);
      CHECK(rec.done == bytes);
    }
    const char* loads[] = {
        "tp.load(d .. '/p.npy')",          "tp.load_safetensors(d .. '/p.safetensors').x",
        "tp.load_hdf5(d .. '/p.h5', 'x')", "tp.load_hdf5(d .. '/k.h5', 'x')",
        "tp.load_zarr(d .. '/p.zarr')",    "tp.load_csv(d .. '/p.csv')",
    };
    for (const std::string load : loads) {
      CAPTURE(ranks);
      CAPTURE(load);
      rec.reset();
      run(L, std::string("local y = ") + load + "; assert(y:sum():item() == 4501500)");
      CHECK(rec.total == bytes);
      CHECK(rec.done >= bytes);  // a box two ranks' blocks share is read by both
    }
    lua_close(L);
  }
  std::filesystem::remove_all(dir);
}
