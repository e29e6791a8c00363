// One io_context on one thread owns every socket, so connection state needs no locks; only
// the job queue and "who is running" are shared with the Lua thread, under one mutex. A client
// is never trusted: unauthenticated ones get 10 s to log in, may send one small frame, and are
// capped in number per source and in all; failed logins are logged and slowed per source, while
// a correct token is always admitted at once, so no one can lock the owner out; a bad frame
// closes only its own connection, and a client that will not read its output is dropped before
// it can fill our memory. A source is the peer's address, and over loopback the user owning
// the client's socket (repl/peer_uid.hpp): local users share 127.0.0.1.
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

#include "repl/peer_uid.hpp"
#include "repl/token.hpp"

namespace tapestry::repl {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);
constexpr auto kAuthTimeout = 10s;
constexpr auto kFailureDelay = 250ms;   // every failed login waits this long for its answer
constexpr auto kSlowFailureDelay = 3s;  // ... and this long past kMaxFailures from its source
constexpr size_t kMaxFailures = 10;     // failed logins per source per minute before slowing
constexpr size_t kMaxClients = 64;      // logged in
constexpr size_t kMaxUnauthed = 16;     // connected, not logged in yet
constexpr size_t kMaxUnauthedPerSource = 4;
constexpr auto kStopGrace = 5s;  // a stopping server waits this long for the running job
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
  std::unordered_map<std::string, std::deque<Clock::time_point>> failures;  // per source, last minute
  std::unordered_map<std::string, size_t> unauthed;  // connections not logged in, per source
  size_t unauthed_total = 0;
  size_t authed_total = 0;
  asio::steady_timer watchdog{io};  // re-sends a cancel until the running job ends
  asio::steady_timer grace{io};     // a stopping server's wait for the running job

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
  size_t recent_failures(const std::string& source);  // in the last minute, after adding none
  std::string source_of(const tcp::socket& s, bool& own) const;
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
    source = hub.source_of(socket, own);
  }

  Listener::Impl& hub;
  tcp::socket socket;
  uint64_t id;
  std::string peer;
  std::string source;           // who, for the per-source limits: "127.0.0.1 uid 1000", "10.0.0.2"
  bool own = false;             // the server's own user over loopback: not held to kMaxUnauthed
  bool counted = false;         // counted in the hub's unauthenticated connections
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

  // Leaves the hub's count of unauthenticated connections (logged in or gone).
  void uncount() {
    if (!counted) return;
    counted = false;
    --hub.unauthed_total;
    if (--hub.unauthed[source] == 0) hub.unauthed.erase(source);
  }

  void close() {
    if (closed) return;
    closed = true;
    uncount();
    if (authed) --hub.authed_total;
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
    // The right token is admitted at once whatever others did; a wrong one is answered late,
    // and later still when its source keeps failing.
    if (!tokens_equal(f.payload, hub.options.token)) {
      const size_t recent = hub.recent_failures(source) + 1;
      hub.failures[source].push_back(Clock::now());
      hub.log("failed login from " + peer + " (" + source + ", wrong token); " + std::to_string(recent) +
              " from there in the last minute");
      asio::steady_timer wait(hub.io, recent > kMaxFailures ? kSlowFailureDelay : kFailureDelay);
      co_await wait.async_wait(kUseTuple);
      refuse("authentication failed: wrong token");
      co_return false;
    }
    if (hub.authed_total >= kMaxClients) {
      hub.log("refused " + peer + ": already " + std::to_string(kMaxClients) + " clients");
      refuse("too many clients (at most " + std::to_string(kMaxClients) + ")");
      co_return false;
    }
    uncount();
    authed = true;
    ++hub.authed_total;
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
  // Until it logs in, a client may send one Auth frame of a few hundred bytes: that is all the
  // server buffers for it.
  FrameDecoder decoder(kMaxAuthPayload);
  std::vector<char> buf(kMaxAuthPayload + kHeaderSize);
  bool go_on = true;
  while (go_on && !closed && !closing) {
    if (authed && buf.size() < 64 * 1024) {
      decoder.set_max_payload(kMaxPayload);
      buf.resize(64 * 1024);
    }
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
      if (authed) decoder.set_max_payload(kMaxPayload);  // the frames after Auth may be large
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

size_t Listener::Impl::recent_failures(const std::string& source) {
  auto it = failures.find(source);
  if (it == failures.end()) return 0;
  const auto now = Clock::now();
  while (!it->second.empty() && it->second.front() < now - 60s) it->second.pop_front();
  if (it->second.empty()) {
    failures.erase(it);
    return 0;
  }
  return it->second.size();
}

std::string Listener::Impl::source_of(const tcp::socket& s, bool& own) const {
  boost::system::error_code ec;
  const tcp::endpoint peer = s.remote_endpoint(ec);
  const tcp::endpoint local = s.local_endpoint(ec);
  if (ec) return "?";
  std::string source = peer.address().to_string();
  if (peer.address().is_loopback()) {
    if (const auto uid = loopback_peer_uid(peer.port(), local.port())) {
      own = *uid == ::geteuid();
      source += " uid " + std::to_string(*uid);
    }
  }
  return source;
}

asio::awaitable<void> Listener::Impl::accept_loop() {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kUseTuple);
    if (ec) {
      if (!acceptor.is_open()) co_return;
      continue;  // e.g. too many open files: keep serving the others
    }
    auto client = std::make_shared<Client>(*this, std::move(socket), next_id++);
    // Connections not logged in yet are few per source and few in all, but the server's own
    // user (over loopback) always has room: idle connections cannot lock the owner out.
    const size_t from_source = unauthed.count(client->source) ? unauthed[client->source] : 0;
    if (!client->own && (from_source >= kMaxUnauthedPerSource || unauthed_total >= kMaxUnauthed)) {
      log("refused " + client->peer + " (" + client->source + "): already " +
          std::to_string(from_source >= kMaxUnauthedPerSource ? from_source : unauthed_total) +
          " connections waiting to log in" + (from_source >= kMaxUnauthedPerSource ? " from there" : ""));
      client->refuse("too many connections waiting to log in");
      continue;
    }
    client->counted = true;
    ++unauthed[client->source];
    ++unauthed_total;
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
    // The Lua thread ends the running job at its next check; one stuck in a long C call never
    // checks, and must not keep the server up.
    m.grace.expires_after(kStopGrace);
    m.grace.async_wait([&m](boost::system::error_code err) {
      bool running = false;
      {
        std::lock_guard lock(m.mu);
        running = m.running_client != 0;
      }
      if (err || !running) return;
      m.log("the running chunk did not stop within 5 s; exiting");
      if (m.options.force_exit) m.options.force_exit();
    });
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
