// The socket between a driver and the head (rank 0) of the MPI job it launched: framed
// messages over TCP, and the encoding of tensor values in them.
//   JobLink l = JobLink::connect("host", port);   l.send(JobLink::Hello, body);   // the head
//   std::optional<JobLink::Frame> f = l.receive(0.1);   // nullopt: nothing within 0.1 s
// A frame is {magic "TPJL" u32, kind u32, length u64, body}; a closed or broken socket throws
// LinkClosed, a malformed frame Error. Writes never raise SIGPIPE.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/ir/codec.hpp"
#include "engine/ir/value.hpp"

namespace tapestry {

// The other end is gone (EOF, reset) or the socket failed.
struct LinkClosed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class JobLink {
 public:
  enum Kind : uint32_t {
    Hello = 1,      // head -> driver: token, ranks, device transport
    Run = 2,        // driver -> head: a plan to run (head.cpp has the layout)
    Io = 3,         // an I/O job's bytes
    Drop = 4,       // keys to free on every rank
    Replicate = 5,  // keys to copy to each rank's buddy
    Restore = 6,    // encode_restore's job
    Cancel = 7,     // Ctrl-C at the driver: cancel the request running
    Shutdown = 8,   // the driver ends the job
    Result = 9,     // head -> driver: how a request ended
    Lost = 10,      // head -> driver: a rank was lost; the job salvaged what it held and ends
    Progress = 11,  // head -> driver: blocks done (f64), blocks in all (i64), bytes moved (i64)
  };
  struct Frame {
    Kind kind;
    std::vector<char> body;
  };

  JobLink() = default;
  explicit JobLink(int fd) : fd_(fd) {}
  ~JobLink();
  JobLink(JobLink&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  JobLink& operator=(JobLink&& o) noexcept;
  JobLink(const JobLink&) = delete;
  JobLink& operator=(const JobLink&) = delete;

  static JobLink connect(const std::string& host, int port);  // throws LinkClosed
  bool open() const { return fd_ >= 0; }
  void close();
  // Wakes a receive() blocked on another thread (it throws LinkClosed); sends still work.
  void stop_receiving();

  void send(Kind kind, const std::vector<char>& body);
  // The next frame, waiting at most timeout_s (< 0: forever); nullopt when none came.
  std::optional<Frame> receive(double timeout_s);

 private:
  int fd_ = -1;
};

// A listening TCP socket on every address, on a port the system picks.
class JobListener {
 public:
  JobListener();  // throws Error
  ~JobListener();
  JobListener(const JobListener&) = delete;
  JobListener& operator=(const JobListener&) = delete;
  int port() const { return port_; }
  // The next connection within timeout_s, or an empty link.
  JobLink accept(double timeout_s);

 private:
  int fd_ = -1, port_ = 0;
};

// A tensor value on the wire: dtype, shape, the contiguous bytes.
void put_value(ByteWriter& w, const Value& v);
std::shared_ptr<Value> get_value(ByteReader& r);

}  // namespace tapestry
