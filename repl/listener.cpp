// One io_context on one thread owns every socket, so connection state needs no locks; only
// the job queue and "who is running" are shared with the Lua thread, under one mutex. A client
// is never trusted: unauthenticated ones get 10 s to log in, failed logins are logged and at
// most kMaxFailures per minute are even checked, a bad frame closes only its own connection,
// and a client that will not read its output is dropped before it can fill our memory.
#include "repl/listener.hpp"

#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <ctime>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "repl/token.hpp"

namespace tapestry::repl {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);
constexpr auto kAuthTimeout = 10s;
constexpr auto kFailureDelay = 250ms;  // every failed login waits this long for its answer
constexpr size_t kMaxFailures = 10;    // checked logins that may fail per minute, server-wide
constexpr size_t kMaxClients = 64;
constexpr size_t kMaxQueuedPerClient = 8;
constexpr size_t kMaxOutbox = size_t{64} << 20;  // unread output before a client is dropped

}  // namespace

struct Client;

struct Listener::Impl {
  explicit Impl(ListenerOptions o) : options(std::move(o)), acceptor(io), signals(io, SIGINT, SIGTERM) {}

  ListenerOptions options;
  asio::io_context io;
  tcp::acceptor acceptor;
  asio::signal_set signals;
  std::thread thread;

  // Network thread only.
  std::unordered_map<uint64_t, std::weak_ptr<Client>> clients;
  uint64_t next_id = 1;
  std::deque<Clock::time_point> failures;  // failed logins in the last minute
  asio::steady_timer watchdog{io};         // re-sends a cancel until the running job ends

  // Shared with the Lua thread.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;
  std::unordered_set<uint64_t> open;  // authenticated clients still connected
  bool stopping = false;
  uint64_t running_client = 0;  // 0: no job is running
  uint64_t running_job = 0;
  bool running_cancelled = false;

  void log(const std::string& what);
  asio::awaitable<void> accept_loop();
  asio::awaitable<void> throttle();
  void record_failure() { failures.push_back(Clock::now()); }
  bool enqueue(Job job);
  void cancel(uint64_t client);
  void client_gone(uint64_t client);
  void shutdown();
  void cancel_running_locked();
};

// One connection. Lives as long as its coroutine or a pending write holds it.
struct Client : std::enable_shared_from_this<Client> {
  Client(Listener::Impl& h, tcp::socket s, uint64_t i) : hub(h), socket(std::move(s)), id(i), deadline(h.io) {
    boost::system::error_code ec;
    const tcp::endpoint ep = socket.remote_endpoint(ec);
    peer = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  Listener::Impl& hub;
  tcp::socket socket;
  uint64_t id;
  std::string peer;
  asio::steady_timer deadline;  // the login deadline, then the deadline to flush before closing
  bool authed = false, closing = false, closed = false, writing = false;
  std::deque<std::string> outbox;
  size_t outbox_bytes = 0;

  std::string name() const { return "client " + std::to_string(id) + " (" + peer + ")"; }

  void send(std::string frame) {
    if (closed) return;
    outbox_bytes += frame.size();
    outbox.push_back(std::move(frame));
    if (outbox_bytes > kMaxOutbox) {
      hub.log(name() + " does not read its output; dropped");
      close();
      return;
    }
    if (!writing) write_next();
  }

  void write_next() {
    writing = true;
    asio::async_write(socket, asio::buffer(outbox.front()),
                      [self = shared_from_this()](boost::system::error_code ec, size_t) {
                        self->writing = false;
                        if (ec || self->closed) return self->close();
                        self->outbox_bytes -= self->outbox.front().size();
                        self->outbox.pop_front();
                        if (!self->outbox.empty()) self->write_next();
                        else if (self->closing) self->close();
                      });
  }

  // Says why, then closes once that is written (or after 5 s if the peer will not read).
  void refuse(const std::string& why) {
    send(encode_frame(FrameType::Error, why));
    closing = true;
    if (closed) return;
    deadline.expires_after(5s);
    deadline.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->close();
    });
    if (!writing) close();
  }

  void close() {
    if (closed) return;
    closed = true;
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
    deadline.cancel();
    hub.client_gone(id);
    if (authed) hub.log(name() + " left");
  }

  asio::awaitable<bool> handle(Frame frame);
  asio::awaitable<void> run();
};

asio::awaitable<bool> Client::handle(Frame f) {
  if (!authed) {
    if (f.type == FrameType::Bye) co_return false;
    if (f.type != FrameType::Auth) {
      hub.log(name() + " sent a " + std::string(frame_type_name(f.type)) +
              " frame before logging in; closed");
      refuse("authenticate first");
      co_return false;
    }
    co_await hub.throttle();
    if (closed) co_return false;
    if (!tokens_equal(f.payload, hub.options.token)) {
      hub.record_failure();
      hub.log("failed login from " + peer + " (wrong token); " + std::to_string(hub.failures.size()) +
              " in the last minute");
      asio::steady_timer wait(hub.io, kFailureDelay);
      co_await wait.async_wait(kUseTuple);
      refuse("authentication failed: wrong token");
      co_return false;
    }
    authed = true;
    deadline.cancel();
    {
      std::lock_guard lock(hub.mu);
      hub.open.insert(id);
    }
    hub.log(name() + " logged in");
    send(encode_frame(FrameType::Hello, hub.options.hello));
    co_return true;
  }
  switch (f.type) {
    case FrameType::Chunk:
    case FrameType::Complete:
      if (!hub.enqueue(Job{id, f.type, std::move(f.payload), false})) {
        hub.log(name() + " queued too many chunks; closed");
        refuse("too many chunks queued (at most " + std::to_string(kMaxQueuedPerClient) + ")");
        co_return false;
      }
      co_return true;
    case FrameType::Cancel: hub.cancel(id); co_return true;
    case FrameType::Bye: co_return false;
    default:
      hub.log(name() + " sent an unexpected " + std::string(frame_type_name(f.type)) + " frame; closed");
      refuse("unexpected " + std::string(frame_type_name(f.type)) + " frame from a client");
      co_return false;
  }
}

asio::awaitable<void> Client::run() {
  auto self = shared_from_this();
  deadline.expires_after(kAuthTimeout);
  deadline.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto c = weak.lock();
    if (ec || !c || c->authed || c->closing) return;
    c->hub.log(c->name() + " did not log in within 10 s; closed");
    c->close();
  });
  FrameDecoder decoder;
  std::vector<char> buf(64 * 1024);
  bool go_on = true;
  while (go_on && !closed && !closing) {
    auto [ec, n] = co_await socket.async_read_some(asio::buffer(buf), kUseTuple);
    if (ec) break;  // EOF, reset, or closed by us
    decoder.feed(buf.data(), n);
    while (go_on && !closed && !closing) {
      DecodeResult r = decoder.next();
      if (r.status == DecodeStatus::NeedMore) break;
      if (r.status == DecodeStatus::Error) {
        hub.log(name() + " sent a malformed frame (" + r.error + "); closed");
        refuse("malformed frame: " + r.error);
        go_on = false;
        break;
      }
      go_on = co_await handle(std::move(r.frame));
    }
  }
  if (!closing) close();
}

void Listener::Impl::log(const std::string& what) {
  char stamp[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  const std::string line = std::string("tapestry serve: ") + stamp + " " + what + "\n";
  ssize_t ignored = ::write(options.log_fd, line.data(), line.size());
  (void)ignored;
}

// Brute force is hopeless against 256 bits, but a flood of logins should not be cheap.
asio::awaitable<void> Listener::Impl::throttle() {
  for (;;) {
    const auto now = Clock::now();
    while (!failures.empty() && failures.front() < now - 60s) failures.pop_front();
    if (failures.size() < kMaxFailures) co_return;
    asio::steady_timer wait(io, failures.front() + 60s);
    co_await wait.async_wait(kUseTuple);
  }
}

asio::awaitable<void> Listener::Impl::accept_loop() {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kUseTuple);
    if (ec) {
      if (!acceptor.is_open()) co_return;
      continue;  // e.g. too many open files: keep serving the others
    }
    auto client = std::make_shared<Client>(*this, std::move(socket), next_id++);
    if (clients.size() >= kMaxClients) {
      log("refused " + client->peer + ": already " + std::to_string(kMaxClients) + " connections");
      client->refuse("too many connections");
      continue;
    }
    clients[client->id] = client;
    asio::co_spawn(io, client->run(), [this](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        log(std::string("internal error in a connection: ") + x.what());
      }
    });
  }
}

bool Listener::Impl::enqueue(Job job) {
  std::lock_guard lock(mu);
  size_t queued = 0;
  for (const Job& j : jobs) queued += j.client == job.client;
  if (queued >= kMaxQueuedPerClient) return false;
  jobs.push_back(std::move(job));
  cv.notify_one();
  return true;
}

// Network thread, mu held: ask the Lua side to stop, and again every 100 ms while the same job
// still runs (the engine clears its flag at the start of each observation).
void Listener::Impl::cancel_running_locked() {
  running_cancelled = true;
  if (options.cancel_running) options.cancel_running();
  watchdog.expires_after(100ms);
  watchdog.async_wait([this, job = running_job](boost::system::error_code ec) {
    if (ec) return;
    std::lock_guard lock(mu);
    if (running_job == job && running_client != 0) cancel_running_locked();
  });
}

void Listener::Impl::cancel(uint64_t client) {
  std::lock_guard lock(mu);
  if (running_client == client && !running_cancelled) return cancel_running_locked();
  for (Job& j : jobs)
    if (j.client == client) j.cancelled = true;
}

void Listener::Impl::client_gone(uint64_t client) {
  clients.erase(client);
  std::lock_guard lock(mu);
  open.erase(client);
  std::erase_if(jobs, [client](const Job& j) { return j.client == client; });
  if (running_client == client && !running_cancelled) cancel_running_locked();
}

void Listener::Impl::shutdown() {
  boost::system::error_code ignored;
  acceptor.close(ignored);
  signals.cancel(ignored);
  std::vector<std::shared_ptr<Client>> all;
  for (auto& [id, weak] : clients)
    if (auto c = weak.lock()) all.push_back(c);
  for (auto& c : all) c->close();
  std::lock_guard lock(mu);
  stopping = true;
  if (running_client != 0 && !running_cancelled) cancel_running_locked();
  watchdog.cancel();
  cv.notify_all();
}

Listener::Listener(ListenerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  Impl& m = *impl_;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(m.options.host, ec);
  if (ec) throw std::runtime_error("cannot listen on '" + m.options.host + "': not an IP address");
  const tcp::endpoint ep(address, m.options.port);
  m.acceptor.open(ep.protocol(), ec);
  if (!ec) m.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(ep, ec);
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + m.options.host + ":" + std::to_string(m.options.port) +
                             ": " + ec.message());
  m.signals.async_wait([&m](boost::system::error_code e, int sig) {
    if (e) return;
    m.log(std::string("stopping on ") + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
    m.shutdown();
  });
  asio::co_spawn(m.io, m.accept_loop(), asio::detached);
  m.thread = std::thread([&m] { m.io.run(); });
}

Listener::~Listener() {
  stop();  // closes the connections first, then nothing more runs
  asio::post(impl_->io, [&io = impl_->io] { io.stop(); });
  if (impl_->thread.joinable()) impl_->thread.join();
}

uint16_t Listener::port() const { return impl_->acceptor.local_endpoint().port(); }

std::string Listener::address() const {
  const tcp::endpoint ep = impl_->acceptor.local_endpoint();
  std::string text;
  if (ep.address().is_v6()) text += '[';
  text += ep.address().to_string();
  if (ep.address().is_v6()) text += ']';
  text += ':';
  text += std::to_string(ep.port());
  return text;
}

std::optional<Job> Listener::next_job() {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  for (;;) {
    m.cv.wait(lock, [&m] { return m.stopping || !m.jobs.empty(); });
    if (m.stopping) return std::nullopt;
    Job job = std::move(m.jobs.front());
    m.jobs.pop_front();
    if (!m.open.contains(job.client)) continue;
    m.running_client = job.client;
    m.running_job += 1;
    m.running_cancelled = job.cancelled;
    return job;
  }
}

void Listener::done() {
  std::lock_guard lock(impl_->mu);
  impl_->running_client = 0;
  impl_->running_cancelled = false;
}

void Listener::send(uint64_t client, std::string frame) {
  Impl& m = *impl_;
  asio::post(m.io, [&m, client, frame = std::move(frame)]() mutable {
    auto it = m.clients.find(client);
    if (it == m.clients.end()) return;
    if (auto c = it->second.lock()) c->send(std::move(frame));
  });
}

void Listener::stop() {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.mu);
    if (m.stopping) return;
  }
  asio::post(m.io, [&m] { m.shutdown(); });
}

}  // namespace tapestry::repl
