// The thread pool behind parallel_for, num_threads and set_num_threads.
#include "kernels/cpu/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry::cpu {
namespace {

// The width set before the pool first ran (a session's TAPESTRY_THREADS), so the pool starts
// with it instead of starting one thread per core and stopping most of them; 0: one per core.
int g_initial_width = 0;

int default_threads() {
  if (g_initial_width > 0) return g_initial_width;
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// Set while a thread runs a piece, so that a nested parallel_for runs inline.
thread_local bool t_in_job = false;

class Pool {
 public:
  explicit Pool(int width) { start(width); }
  ~Pool() { stop(); }

  int width() const { return width_; }

  void resize(int width) {
    std::lock_guard<std::mutex> job(job_mutex_);
    stop();
    start(width);
  }

  // False when another thread's job holds the pool; the caller then runs inline.
  bool try_run(int64_t n, int64_t grain, const RangeFn& fn) {
    std::unique_lock<std::mutex> job(job_mutex_, std::try_to_lock);
    if (!job.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lk(m_);
      fn_ = &fn;
      n_ = n;
      grain_ = grain;
      next_.store(0, std::memory_order_relaxed);
      error_ = nullptr;
      open_ = true;
      ++generation_;
    }
    wake_.notify_all();
    work(0);
    // Close the job: a worker waking from now on skips it, so only those already in
    // are waited for (a descheduled worker never delays the caller).
    std::unique_lock<std::mutex> lk(m_);
    open_ = false;
    done_.wait(lk, [&] { return active_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  void start(int width) {
    width_ = std::max(1, width);
    stopping_ = false;
    for (int w = 1; w < width_; ++w) threads_.emplace_back([this, w] { loop(w); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  void loop(int worker) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(m_);
        wake_.wait(lk, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        if (!open_) continue;
        ++active_;
      }
      work(worker);
      std::lock_guard<std::mutex> lk(m_);
      if (--active_ == 0 && !open_) done_.notify_one();
    }
  }

  void work(int worker) {
    t_in_job = true;
    for (;;) {
      int64_t lo = next_.fetch_add(grain_, std::memory_order_relaxed);
      if (lo >= n_) break;
      try {
        (*fn_)(lo, std::min(n_, lo + grain_), worker);
      } catch (...) {  // a thread boundary: carried to the caller, rethrown there
        std::lock_guard<std::mutex> lk(m_);
        if (!error_) error_ = std::current_exception();
        next_.store(n_, std::memory_order_relaxed);
      }
    }
    t_in_job = false;
  }

  int width_ = 1;
  std::vector<std::thread> threads_;
  std::mutex job_mutex_;  // one job at a time
  std::mutex m_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  bool open_ = false;  // the current job still takes workers
  int active_ = 0;     // workers inside the current job
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0, grain_ = 1;
  std::atomic<int64_t> next_{0};
  std::exception_ptr error_;
};

Pool& pool() {
  static Pool p(default_threads());
  return p;
}

}  // namespace

int pool_width() { return pool().width(); }

int num_threads() { return pool().width(); }

void set_num_threads(int n) {
  internal_check(n >= 1);
  internal_check(!t_in_job);
  g_initial_width = n;
  if (n != pool().width()) pool().resize(n);
}

int64_t grain_for(int64_t n, int64_t min_grain) {
  int64_t pieces = 4 * static_cast<int64_t>(pool_width());
  return std::max<int64_t>({1, min_grain, (n + pieces - 1) / pieces});
}

void parallel_for(int64_t n, int64_t grain, const RangeFn& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (n <= grain || t_in_job || pool().width() == 1 || !pool().try_run(n, grain, fn)) {
    // Inline: still hands out pieces of `grain` so fn sees the same ranges.
    bool outer = t_in_job;
    t_in_job = true;
    try {
      for (int64_t lo = 0; lo < n; lo += grain) fn(lo, std::min(n, lo + grain), 0);
    } catch (...) {  // restore, then the same exception goes on
      t_in_job = outer;
      throw;
    }
    t_in_job = outer;
  }
}

}  // namespace tapestry::cpu
