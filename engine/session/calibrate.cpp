#include "engine/session/calibrate.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <vector>

#include "engine/ir/value.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The fastest of `reps` runs of f: the machine's rate, not its load's.
template <class F> double best_seconds(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, since(t0));
  }
  return std::max(best, 1e-9);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double sgemm_flops_per_s() {
  constexpr int64_t n = 768;
  auto a = Value::alloc(DType::F32, {n, n}), b = Value::alloc(DType::F32, {n, n}),
       c = Value::alloc(DType::F32, {n, n});
  for (auto* v : {a.get(), b.get()}) {
    float* p = v->data<float>();
    for (int64_t i = 0; i < n * n; ++i) p[i] = float(i % 7) * 0.25f;
  }
  cpu::run_matmul(a->view(), b->view(), c->view());  // warm: threads started, pages touched
  return 2.0 * double(n * n * n) / best_seconds(3, [&] { cpu::run_matmul(a->view(), b->view(), c->view()); });
}

double copy_bytes_per_s() {
  constexpr size_t bytes = size_t(32) << 20;
  std::vector<char> from(bytes, 1), to(bytes, 0);
  return 2.0 * double(bytes) / best_seconds(4, [&] { std::memcpy(to.data(), from.data(), bytes); });
}

}  // namespace

MachineRates calibrate(const std::string& key) {
  const auto t0 = Clock::now();
  MachineRates r;
  r.key = key;
  r.flops_per_s = sgemm_flops_per_s();
  r.mem_bytes_per_s = copy_bytes_per_s();
  r.link = plan::Mesh{}.intra;
  r.seconds = since(t0);
  r.measured_at = utc_now();
  return r;
}

plan::Link ping_pong(comm::Mpi& mpi, bool* measured) {
  *measured = false;
  if (mpi.size() < 2) return plan::Mesh{}.intra;
  constexpr int kTag = 31;  // only before the job's first command: no other message is in flight
  const int me = mpi.rank();
  // One round trip of `bytes`: rank 0 sends and waits for the echo; rank 1 echoes. Through
  // post/poll, the path a plan's slices take (a received message is a fresh buffer there too);
  // spinning, since a rendezvous send moves only while its sender tests it.
  auto round_trip = [&](size_t bytes) {
    const int peer = 1 - me;
    if (me == 0) mpi.post(peer, kTag, std::make_shared<const std::vector<char>>(bytes, 'x'));
    std::optional<std::vector<char>> got;
    while (!(got = mpi.poll(peer, kTag))) mpi.progress();
    if (me == 1) mpi.post(peer, kTag, std::make_shared<const std::vector<char>>(std::move(*got)));
    while (!mpi.progress()) {
    }
  };
  double latency = 0, per_byte = 0;
  if (me <= 1) {
    round_trip(8);  // warm: connections set up
    latency = best_seconds(20, [&] { round_trip(8); }) / 2;
    const size_t big = size_t(1) << 20;
    per_byte = (best_seconds(5, [&] { round_trip(big); }) / 2 - latency) / double(big);
  }
  *measured = me <= 1;
  return plan::Link{1.0 / std::max(per_byte, 1e-12), latency};
}

}  // namespace tapestry
