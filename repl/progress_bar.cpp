// The bar is drawn by its own thread, so a single long block (one big matmul) still gets a
// bar and an ETA; the executor only stores counts under a mutex between blocks.
#include "repl/progress_bar.hpp"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/telemetry.hpp"
#include "repl/shell_env.hpp"

namespace tapestry::repl {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kShowAfterS = 1.0;
constexpr auto kRedraw = std::chrono::milliseconds(100);
constexpr int kWidth = 24;

std::string human_bytes(double b) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, kUnits[u]);
  return buf;
}

std::string human_seconds(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, int(s) % 3600 / 60);
  return buf;
}

class ProgressBar final : public ProgressListener {
 public:
  explicit ProgressBar(std::function<void(std::string_view)> sink)
      : sink_(std::move(sink)), thread_([this] { loop(); }) {}
  ~ProgressBar() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void start(int64_t total) override {
    std::lock_guard<std::mutex> lock(mu_);
    s_ = ProgressState{0, total, 0};
    started_ = Clock::now();
    active_ = true;
    cv_.notify_all();
  }
  void update(const ProgressState& s) override {
    std::lock_guard<std::mutex> lock(mu_);
    s_ = s;
  }
  void finish() override {
    std::lock_guard<std::mutex> lock(mu_);
    active_ = false;
    if (drawn_) {
      sink_("");  // erase: the results print on a clean line
      drawn_ = false;
    }
  }

 private:
  void loop() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);  // Ctrl-C belongs to the thread running Lua
    std::unique_lock<std::mutex> lock(mu_);
    while (!quit_) {
      if (!active_) {
        cv_.wait(lock);
        continue;
      }
      cv_.wait_for(lock, kRedraw);
      const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
      if (active_ && !quit_ && elapsed >= kShowAfterS) draw(elapsed);
    }
  }

  // The caller holds the lock, so finish() cannot erase half a line.
  void draw(double elapsed) {
    if (s_.io_total > 0) return draw_io(elapsed);
    const double total = double(s_.blocks_total > 0 ? s_.blocks_total : 1);
    const double frac = std::min(1.0, s_.blocks_done / total);
    const int fill = int(frac * kWidth + 0.5);
    std::string line = "[" + std::string(fill, '#') + std::string(kWidth - fill, '.') + "] ";
    char buf[160];
    std::snprintf(buf, sizeof buf, "%lld/%lld blocks  %s moved  ",
                  static_cast<long long>(s_.blocks_done + 0.5), static_cast<long long>(s_.blocks_total),
                  human_bytes(double(s_.bytes_moved)).c_str());
    line += buf;
    line += s_.blocks_done > 0 ? "ETA " + human_seconds(elapsed * (total - s_.blocks_done) / s_.blocks_done)
                               : "elapsed " + human_seconds(elapsed);
    sink_(line);
    drawn_ = true;
  }

  // A load or save: bytes of file data done of the total, and the rate.
  void draw_io(double elapsed) {
    const double done = double(s_.io_done), total = double(s_.io_total);
    const double frac = std::min(1.0, done / total);
    const int fill = int(frac * kWidth + 0.5);
    std::string line = "[" + std::string(fill, '#') + std::string(kWidth - fill, '.') + "] ";
    line += human_bytes(done) + " of " + human_bytes(total) + "  " + human_bytes(done / elapsed) + "/s  ";
    line += done > 0 && done < total ? "ETA " + human_seconds(elapsed * (total - done) / done)
                                     : "elapsed " + human_seconds(elapsed);
    sink_(line);
    drawn_ = true;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  ProgressState s_;
  Clock::time_point started_;
  bool active_ = false, drawn_ = false, quit_ = false;
  std::function<void(std::string_view)> sink_;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace

bool progress_wanted(bool stdout_is_terminal) { return shell_env().progress.value_or(stdout_is_terminal); }

void show_progress_line(std::string_view line) {
  std::string text = "\r\033[K";
  text += line;
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
}

void install_progress_bar(Telemetry& t) {
  static ProgressBar bar(show_progress_line);  // joined at exit, after the last evaluation
  t.progress_listener = &bar;
}

std::unique_ptr<ProgressListener> make_progress_bar(std::function<void(std::string_view)> sink) {
  return std::make_unique<ProgressBar>(std::move(sink));
}

}  // namespace tapestry::repl
