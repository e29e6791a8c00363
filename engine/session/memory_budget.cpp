// The default per-rank memory budget (memory_budget.hpp): what the machine can really give.
#include "engine/session/memory_budget.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace tapestry {

namespace {

// The first number after `key` in a "key: value kB"-style file, in bytes (times `unit`).
int64_t field(const char* path, const std::string& key, int64_t unit) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (line.starts_with(key)) {
      std::istringstream in(line.substr(key.size()));
      int64_t v = -1;
      if (in >> v && v >= 0) return v * unit;
    }
  return -1;
}

// A cgroup v2 file holding one number ("max" for none).
int64_t cgroup_number(const char* path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s == "max") return -1;
  int64_t v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() ? v : -1;
}

}  // namespace

int64_t available_memory() {
  int64_t avail = field("/proc/meminfo", "MemAvailable:", 1024);
  auto lower = [&avail](int64_t v) {
    if (v >= 0) avail = avail < 0 ? v : std::min(avail, v);
  };
  const int64_t max = cgroup_number("/sys/fs/cgroup/memory.max");
  const int64_t cur = cgroup_number("/sys/fs/cgroup/memory.current");
  if (max >= 0 && cur >= 0) lower(std::max<int64_t>(0, max - cur));
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const int64_t used = field("/proc/self/status", "VmSize:", 1024);
    lower(std::max<int64_t>(0, static_cast<int64_t>(as.rlim_cur) - std::max<int64_t>(0, used)));
  }
  return std::max<int64_t>(0, avail);
}

int64_t default_memory_per_rank(int64_t available, int ranks_on_machine) {
  if (available <= 0) return int64_t{16} * 1000 * 1000 * 1000;
  const int64_t margin = std::max<int64_t>(available / 8, int64_t{256} << 20);
  const int64_t per = (available - margin) / std::max(1, ranks_on_machine);
  return std::max<int64_t>(per, int64_t{64} << 20);
}

bool parse_byte_count(std::string_view s, int64_t& bytes) {
  int64_t mult = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
      case 'k': mult = int64_t{1} << 10; break;
      case 'M':
      case 'm': mult = int64_t{1} << 20; break;
      case 'G':
      case 'g': mult = int64_t{1} << 30; break;
      default: break;
    }
    if (mult != 1) s.remove_suffix(1);
  }
  int64_t n = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, n);
  if (s.empty() || ec != std::errc() || ptr != end || n < 0 || n > std::numeric_limits<int64_t>::max() / mult)
    return false;
  bytes = n * mult;
  return true;
}

}  // namespace tapestry
