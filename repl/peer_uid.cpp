#include "repl/peer_uid.hpp"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tapestry::repl {

namespace {

// The port of "0100007F:1C25" (hex, after the colon).
std::optional<uint16_t> port_of(std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  unsigned v = 0;
  const char* b = address.data() + colon + 1;
  const char* e = address.data() + address.size();
  auto [end, ec] = std::from_chars(b, e, v, 16);
  if (ec != std::errc() || end != e || v > 0xffff) return std::nullopt;
  return static_cast<uint16_t>(v);
}

}  // namespace

std::optional<unsigned> peer_uid_in_table(std::string_view table, uint16_t peer_port, uint16_t server_port) {
  std::istringstream lines{std::string(table)};
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; f.size() < 8 && fields >> w;) f.push_back(w);
    if (f.size() < 8 || port_of(f[1]) != peer_port || port_of(f[2]) != server_port) continue;
    unsigned uid = 0;
    auto [end, ec] = std::from_chars(f[7].data(), f[7].data() + f[7].size(), uid);
    if (ec == std::errc() && end == f[7].data() + f[7].size()) return uid;
  }
  return std::nullopt;
}

std::optional<unsigned> loopback_peer_uid(uint16_t peer_port, uint16_t server_port) {
  for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream f(path);
    if (!f) continue;
    std::ostringstream text;
    text << f.rdbuf();
    if (auto uid = peer_uid_in_table(text.str(), peer_port, server_port)) return uid;
  }
  return std::nullopt;
}

}  // namespace tapestry::repl
