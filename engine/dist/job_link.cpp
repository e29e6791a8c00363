#include "engine/dist/job_link.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

namespace {

constexpr uint32_t kLinkMagic = 0x4c4a5054;  // "TPJL"
constexpr uint64_t kMaxFrame = uint64_t(1) << 40;

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw LinkClosed(cat_str("the job's socket: ", std::strerror(errno)));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) throw LinkClosed("the job's socket was closed");
    if (r < 0) throw LinkClosed(cat_str("the job's socket: ", std::strerror(errno)));
    p += r;
    n -= static_cast<size_t>(r);
  }
}

}  // namespace

JobLink::~JobLink() { close(); }

JobLink& JobLink::operator=(JobLink&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void JobLink::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void JobLink::stop_receiving() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RD);
}

JobLink JobLink::connect(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res)
    throw LinkClosed(cat_str("cannot resolve the driver's host '", host, "'"));
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) throw LinkClosed(cat_str("cannot connect to the driver at ", host, ":", port));
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return JobLink(fd);
}

void JobLink::send(Kind kind, const std::vector<char>& body) {
  if (fd_ < 0) throw LinkClosed("the job's socket is closed");
  char head[16];
  const uint32_t magic = kLinkMagic, k = kind;
  const uint64_t len = body.size();
  std::memcpy(head, &magic, 4);
  std::memcpy(head + 4, &k, 4);
  std::memcpy(head + 8, &len, 8);
  write_all(fd_, head, sizeof head);
  write_all(fd_, body.data(), body.size());
}

std::optional<JobLink::Frame> JobLink::receive(double timeout_s) {
  if (fd_ < 0) throw LinkClosed("the job's socket is closed");
  pollfd p{fd_, POLLIN, 0};
  const int ms = timeout_s < 0 ? -1 : static_cast<int>(timeout_s * 1000);
  const int r = ::poll(&p, 1, ms);
  if (r < 0 && errno == EINTR) return std::nullopt;
  if (r < 0) throw LinkClosed(cat_str("the job's socket: ", std::strerror(errno)));
  if (r == 0) return std::nullopt;
  char head[16];
  read_all(fd_, head, sizeof head);
  uint32_t magic = 0, kind = 0;
  uint64_t len = 0;
  std::memcpy(&magic, head, 4);
  std::memcpy(&kind, head + 4, 4);
  std::memcpy(&len, head + 8, 8);
  if (magic != kLinkMagic || kind < Hello || kind > Progress || len > kMaxFrame)
    throw Error("job link frame rejected: bad header");
  Frame f{static_cast<Kind>(kind), std::vector<char>(len)};
  read_all(fd_, f.body.data(), len);
  return f;
}

JobListener::JobListener() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw Error(cat_str("cannot open a socket for the job: ", std::strerror(errno)));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 4) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw Error(cat_str("cannot listen for the job: ", std::strerror(errno)));
  port_ = ntohs(a.sin_port);
}

JobListener::~JobListener() {
  if (fd_ >= 0) ::close(fd_);
}

JobLink JobListener::accept(double timeout_s) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout_s * 1000)) <= 0) return JobLink();
  const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return JobLink();
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return JobLink(fd);
}

void put_value(ByteWriter& w, const Value& v) {
  const View& view = v.view();
  w.put<uint8_t>(static_cast<uint8_t>(view.dtype));
  w.vec(view.shape);
  View dense = view;
  if (!view.is_contiguous()) {
    auto copy = Value::alloc(view.dtype, view.shape);
    cpu::copy_view(view, copy->v);
    dense = copy->v;
  }
  const size_t n = static_cast<size_t>(dense.numel()) * dtype_size(dense.dtype);
  w.vec(std::span<const char>(n ? dense.byte_ptr() : nullptr, n));
}

std::shared_ptr<Value> get_value(ByteReader& r) {
  const uint8_t dt = r.get<uint8_t>();
  if (dt >= kNumDTypes) r.reject(cat_str("dtype number ", int(dt)));
  const Shape shape = r.vec<int64_t>();
  if (shape.size() > 64) r.reject("a value of more than 64 dims");
  int64_t numel = 1;
  for (int64_t e : shape) {
    if (e < 0 || (e > 0 && numel > (int64_t(1) << 50) / e)) r.reject("a value's shape");
    numel *= e;
  }
  const std::vector<char> data = r.vec<char>();
  const DType dtype = static_cast<DType>(dt);
  if (data.size() != static_cast<size_t>(numel) * dtype_size(dtype))
    r.reject("a value's data is not its shape's");
  auto v = Value::alloc(dtype, shape);
  if (!data.empty()) std::memcpy(v->v.byte_ptr(), data.data(), data.size());
  return v;
}

}  // namespace tapestry
