// The per-machine rates cache: a round trip, entries of other machines kept, bad entries
// measured again; and a session that pins the built-in rates.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/ir/error.hpp"
#include "engine/session/calibrate.hpp"
#include "engine/session/machine_rates.hpp"
#include "engine/session/session.hpp"
#include "kernels/cpu/kernels.hpp"

using namespace tapestry;

namespace {

std::string scratch(const char* name) {
  const auto dir = std::filesystem::temp_directory_path() / cat_str("tapestry_rates_", getpid(), "_", name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

MachineRates sample(const std::string& key, double flops) {
  MachineRates r;
  r.key = key;
  r.flops_per_s = flops;
  r.mem_bytes_per_s = 9e9;
  r.link = plan::Link{7.5e9, 0.375e-6};
  r.link_measured = true;
  r.seconds = 0.25;
  r.measured_at = "2026-01-02T03:04:05Z";
  return r;
}

}  // namespace

TEST_CASE("engine.session.machine_rates.cache_round_trip") {
  const std::string dir = scratch("round_trip");
  const std::string file = rates_cache_file(dir + "/nested");  // folders made as needed
  CHECK(!load_rates(file, "a").has_value());
  save_rates(file, sample("a", 1e11));
  save_rates(file, sample("b", 2e11));  // another machine sharing the home folder
  const std::optional<MachineRates> a = load_rates(file, "a"), b = load_rates(file, "b");
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK(a->flops_per_s == 1e11);
  CHECK(b->flops_per_s == 2e11);
  CHECK(a->mem_bytes_per_s == 9e9);
  CHECK(a->link == plan::Link{7.5e9, 0.375e-6});
  CHECK(a->link_measured);
  CHECK(a->measured_at == "2026-01-02T03:04:05Z");
  save_rates(file, sample("a", 3e11));  // re-measured: replaced, b kept
  CHECK(load_rates(file, "a")->flops_per_s == 3e11);
  CHECK(load_rates(file, "b")->flops_per_s == 2e11);
  // A truncated file or a nonsense entry is measured again, never trusted.
  std::ofstream(file) << "{\"a\": {\"flops_per_s\": -1, \"mem_bytes_per_s\": 1, \"link_bandwidth\": 1}}";
  CHECK(!load_rates(file, "a").has_value());
  std::ofstream(file) << "{\"a\": ";
  CHECK(!load_rates(file, "a").has_value());
  std::filesystem::remove_all(dir);
}

TEST_CASE("engine.session.machine_rates.with_rates_sets_the_mesh") {
  plan::Mesh m = with_rates(plan::Mesh::this_machine(2), sample("a", 1e11));
  CHECK(m.flops_per_s == 1e11);
  CHECK(m.mem_bytes_per_s == 9e9);
  CHECK(m.intra == plan::Link{7.5e9, 0.375e-6});
  MachineRates unmeasured_link = sample("a", 1e11);
  unmeasured_link.link_measured = false;
  CHECK(with_rates(plan::Mesh::this_machine(2), unmeasured_link).intra == plan::Mesh{}.intra);
  CHECK(machine_key(3).find("|3 threads") != std::string::npos);
}

// Measuring: positive rates, in well under a second; a session caches what it measured and
// reads it back; TAPESTRY_RATES=builtin (Config::builtin_rates) keeps the defaults.
TEST_CASE("engine.session.machine_rates.calibrate_and_session") {
  const MachineRates r = calibrate("test");
  CHECK(r.flops_per_s > 1e8);
  CHECK(r.mem_bytes_per_s > 1e8);
  CHECK(r.seconds < 2.0);
  CHECK(!r.link_measured);

  Config c;
  c.cache_dir = scratch("session");
  c.builtin_rates = false;
  {
    Session s(c);
    REQUIRE(s.rates().has_value());
    CHECK(s.mesh().flops_per_s == s.rates()->flops_per_s);
  }
  const std::optional<MachineRates> cached =
      load_rates(rates_cache_file(c.cache_dir), machine_key(cpu::num_threads()));
  REQUIRE(cached.has_value());
  {
    Session again(c);  // read from the cache, not measured again
    REQUIRE(again.rates().has_value());
    CHECK(again.rates()->measured_at == cached->measured_at);
    CHECK(again.rates()->flops_per_s == cached->flops_per_s);
  }
  c.builtin_rates = true;
  Session pinned(c);
  CHECK(!pinned.rates().has_value());
  CHECK(pinned.mesh().flops_per_s == plan::Mesh{}.flops_per_s);
  std::filesystem::remove_all(c.cache_dir);
}
