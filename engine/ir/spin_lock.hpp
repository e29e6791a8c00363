// A lock for short, almost never contended critical sections: the node intern table and the
// release rule's counters, taken a few dozen times per small observation (a CG iteration),
// where std::mutex's lock and unlock calls were ~3% of the time. Spins briefly, then yields.
//   SpinLock mu;  std::lock_guard<SpinLock> lock(mu);
#pragma once

#include <atomic>
#include <thread>

namespace tapestry {

class SpinLock {
 public:
  void lock() {
    for (int spins = 0; flag_.test_and_set(std::memory_order_acquire);) {
      while (flag_.test(std::memory_order_relaxed))
        if (++spins > 64) std::this_thread::yield();  // the holder may be descheduled
    }
  }
  bool try_lock() { return !flag_.test_and_set(std::memory_order_acquire); }
  void unlock() { flag_.clear(std::memory_order_release); }

 private:
  std::atomic_flag flag_;
};

}  // namespace tapestry
