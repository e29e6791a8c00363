// The rates the planner costs this machine with, measured once per machine and cached as JSON.
//   MachineRates r = measured_rates(config);   // the cache's entry for this machine, or measure
//   plan::Mesh m = with_rates(plan::Mesh::this_machine(4), r);
//   save_rates(rates_cache_file(config.cache_dir), r);   // `tapestry --calibrate` re-measures
// The cache (cache_dir/rates.json: $XDG_CACHE_HOME/tapestry or ~/.cache/tapestry) holds one
// entry per machine key, hostname + CPU model + kernel threads, so a home directory shared by
// several machines keeps each one's rates. Modelled meshes never read it: only the running mesh
// is costed with measured rates (docs/planner.md, "The cost model").
#pragma once

#include <optional>
#include <string>

#include "engine/plan/mesh.hpp"

namespace tapestry {

struct MachineRates {
  std::string key;             // machine_key(): what the cache entry is for
  double flops_per_s = 0;      // one rank's sgemm through the CPU kernels, fp32
  double mem_bytes_per_s = 0;  // one rank's copy, bytes read + written per second
  plan::Link link;             // between two ranks of this machine
  bool link_measured = false;  // a ping-pong under mpirun measured `link`; else the built-in one
  double seconds = 0;          // how long measuring took
  std::string measured_at;     // UTC, ISO 8601
};

// hostname|CPU model|threads.
std::string machine_key(int threads);
// dir/rates.json ("" when dir is "": no cache).
std::string rates_cache_file(const std::string& dir);
// The entry for `key` in `file`; nullopt when there is none or the file does not parse (it is
// then measured again and rewritten).
std::optional<MachineRates> load_rates(const std::string& file, const std::string& key);
// Adds or replaces r's entry, keeping the other machines'; written beside and renamed. Throws
// Error naming the file when it cannot be written.
void save_rates(const std::string& file, const MachineRates& r);

// The mesh with r's compute and memory rates, and its within-node link when r measured one.
plan::Mesh with_rates(plan::Mesh m, const MachineRates& r);

std::string to_string(const MachineRates& r);

}  // namespace tapestry
