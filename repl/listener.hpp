// The network side of `tapestry serve`: an Asio thread accepts TCP connections, checks each
// client's token, decodes its frames (repl/protocol.hpp) and queues its chunks for the one
// thread that runs Lua, which takes them one at a time and answers through send().
//   Listener net({"127.0.0.1", 0, token, hello, [] { /* stop the running chunk */ }});
//   while (std::optional<Job> job = net.next_job()) { ...; net.send(job->client, frame); net.done(); }
//   // next_job() returns nullopt after SIGINT / SIGTERM or stop()
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "repl/protocol.hpp"

namespace tapestry::repl {

struct ListenerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: the kernel picks a free one (see Listener::port)
  std::string token;  // what clients must send in their Auth frame
  std::string hello;  // the payload of the Hello frame a client gets after Auth
  // Called on the network thread (never on the Lua thread) when the running job's client sends
  // Cancel or disconnects, and again every 100 ms while that job still runs: must be
  // thread-safe and quick (set flags).
  std::function<void()> cancel_running;
  // Called on the network thread when the server is stopping (SIGINT, SIGTERM) and the running
  // job has not ended 5 s later (a long C call no hook reaches): must end the process.
  std::function<void()> force_exit;
  int log_fd = 2;  // where connections, failed logins and bad input are logged
};

// A chunk or a completion request from one client, for the Lua thread.
struct Job {
  uint64_t client = 0;
  FrameType kind = FrameType::Chunk;  // Chunk or Complete
  std::string text;
  bool cancelled = false;  // the client sent Cancel while this job was still queued
};

class Listener {
 public:
  // Binds and starts listening and the network thread. Throws std::runtime_error (with the
  // address) when it cannot bind.
  explicit Listener(ListenerOptions options);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  uint16_t port() const;        // the bound port (the real one when asked for 0)
  std::string address() const;  // "127.0.0.1:7181"

  // The next job, in arrival order across clients; waits. Jobs of clients that have gone are
  // skipped. nullopt once the server is stopping.
  std::optional<Job> next_job();
  // The job taken by next_job() is finished (its client can no longer be cancelled).
  void done();
  // Queues one encoded frame for a client; from any thread. Dropped if the client has gone.
  void send(uint64_t client, std::string frame);
  // Stops accepting, closes every connection and makes next_job() return nullopt.
  void stop();

 private:
  struct Impl;
  friend struct Client;  // one connection (listener.cpp)
  std::unique_ptr<Impl> impl_;
};

}  // namespace tapestry::repl
