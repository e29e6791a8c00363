#include "repl/peer_uid.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <boost/asio.hpp>

using namespace tapestry::repl;

TEST_CASE("repl.peer_uid.reads_the_client_socket_of_a_table") {
  // The server's accepted socket (local 7181) and the client's (local 40726, owned by 1000).
  const char* table =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0100007F:1C0D 0100007F:9F16 01 00000000:00000000 00:00000000 00000000     0        0 111 1\n"
      "   1: 0100007F:9F16 0100007F:1C0D 01 00000000:00000000 00:00000000 00000000  1000        0 222 1\n";
  CHECK(peer_uid_in_table(table, 40726, 7181) == 1000u);
  CHECK(peer_uid_in_table(table, 7181, 40726) == 0u);
  CHECK_FALSE(peer_uid_in_table(table, 40727, 7181).has_value());
  CHECK_FALSE(peer_uid_in_table("header only\n", 1, 2).has_value());
  CHECK_FALSE(peer_uid_in_table("h\n 0: garbage\n 1: a:zz b:1 01 x y z 12\n", 1, 2).has_value());
}

TEST_CASE("repl.peer_uid.finds_this_process_over_loopback") {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket client(io);
  client.connect(acceptor.local_endpoint());
  asio::ip::tcp::socket server = acceptor.accept();
  const auto uid = loopback_peer_uid(server.remote_endpoint().port(), server.local_endpoint().port());
  if (!uid) return;  // no /proc/net/tcp here: the server then tells sources apart by address
  CHECK(*uid == ::geteuid());
}
