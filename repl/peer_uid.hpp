// Who is on the other end of a loopback TCP connection: every local user reaches 127.0.0.1
// from the same address, so the server tells them apart by the owner of the client's socket,
// which the kernel lists in /proc/net/tcp and /proc/net/tcp6 (as identd reads it).
//   std::optional<unsigned> uid = loopback_peer_uid(peer_port, server_port);
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tapestry::repl {

// The uid owning the socket whose local port is `peer_port` and whose remote port is
// `server_port`; nullopt when none is listed (not Linux, or the client already went).
std::optional<unsigned> loopback_peer_uid(uint16_t peer_port, uint16_t server_port);

// The same, from the text of a /proc/net/tcp-format table (for the tests).
std::optional<unsigned> peer_uid_in_table(std::string_view table, uint16_t peer_port, uint16_t server_port);

}  // namespace tapestry::repl
