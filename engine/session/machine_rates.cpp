#include "engine/session/machine_rates.hpp"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/io/atomic_file.hpp"
#include "engine/ir/error.hpp"

namespace tapestry {

namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

nlohmann::json to_json(const MachineRates& r) {
  return {{"flops_per_s", r.flops_per_s},       {"mem_bytes_per_s", r.mem_bytes_per_s},
          {"link_bandwidth", r.link.bandwidth}, {"link_latency", r.link.latency},
          {"link_measured", r.link_measured},   {"seconds", r.seconds},
          {"measured_at", r.measured_at}};
}

bool positive(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

std::string machine_key(int threads) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return cat_str(host[0] ? host : "unknown host", "|", cpu_model(), "|", threads, " threads");
}

std::string rates_cache_file(const std::string& dir) { return dir.empty() ? "" : dir + "/rates.json"; }

std::optional<MachineRates> load_rates(const std::string& file, const std::string& key) {
  if (file.empty()) return std::nullopt;
  std::ifstream f(file);
  if (!f) return std::nullopt;
  const nlohmann::json all = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!all.is_object() || !all.contains(key) || !all[key].is_object()) return std::nullopt;
  const nlohmann::json& e = all[key];
  MachineRates r;
  r.key = key;
  r.flops_per_s = e.value("flops_per_s", 0.0);
  r.mem_bytes_per_s = e.value("mem_bytes_per_s", 0.0);
  r.link.bandwidth = e.value("link_bandwidth", 0.0);
  r.link.latency = e.value("link_latency", -1.0);
  r.link_measured = e.value("link_measured", false);
  r.seconds = e.value("seconds", 0.0);
  r.measured_at = e.value("measured_at", "");
  // A hand-edited or truncated entry is measured again rather than trusted.
  if (!positive(r.flops_per_s) || !positive(r.mem_bytes_per_s) || !positive(r.link.bandwidth) ||
      !(r.link.latency >= 0))
    return std::nullopt;
  return r;
}

void save_rates(const std::string& file, const MachineRates& r) {
  user_check(!file.empty(), "no cache directory for the machine's rates (set XDG_CACHE_HOME or HOME)");
  nlohmann::json all = nlohmann::json::object();
  if (std::ifstream f(file); f) {
    nlohmann::json old = nlohmann::json::parse(f, nullptr, false);
    if (old.is_object()) all = std::move(old);
  }
  all[r.key] = to_json(r);
  std::error_code ec;  // the cache folder may not exist yet
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  user_check(!ec, "cannot make the folder of '", file, "': ", ec.message());
  io::write_file_atomically(file, all.dump(2) + "\n");
}

plan::Mesh with_rates(plan::Mesh m, const MachineRates& r) {
  m.flops_per_s = r.flops_per_s;
  m.mem_bytes_per_s = r.mem_bytes_per_s;
  if (r.link_measured) m.intra = r.link;
  return m;
}

std::string to_string(const MachineRates& r) {
  std::ostringstream os;
  os << "machine " << r.key << "\n"
     << "  compute  " << r.flops_per_s / 1e9 << " GFLOP/s per rank (sgemm)\n"
     << "  memory   " << r.mem_bytes_per_s / 1e9 << " GB/s per rank (copy, read + write)\n"
     << "  link     " << r.link.bandwidth / 1e9 << " GB/s, " << r.link.latency * 1e6 << " us between ranks ("
     << (r.link_measured ? "MPI ping-pong" : "built-in: run under mpirun -n 2 to measure it") << ")\n"
     << "  measured " << r.measured_at << " in " << r.seconds << " s";
  return os.str();
}

}  // namespace tapestry
