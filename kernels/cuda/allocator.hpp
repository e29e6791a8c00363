// A caching allocator over any raw allocator (cudaMalloc in device.cpp; a fake in the tests).
//   CachingAllocator cache(raw);                 // raw: RawAllocator& that really allocates
//   void* p = cache.allocate(1000);  cache.deallocate(p);   // p goes to its size class's list
//   cache.release_cached();                      // hands every cached block back to `raw`
// Why: cudaMalloc/cudaFree synchronise the device and cost ~10-100 us each; a plan allocates
// the same block shapes on every step, so reusing freed blocks by size class removes them from
// the steady state. Header-only and CUDA-free so that the policy is tested on any machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace tapestry::cuda {

// What actually allocates; allocate returns nullptr when out of memory (never throws).
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p) = 0;
};

// Size classes: powers of two from 512 B up to 1 MiB (small tensors vary a lot, waste is
// bounded by 2x on a few KiB), then multiples of 2 MiB (the device's large-page granule, so a
// big block wastes under 2 MiB).
inline size_t size_class(size_t bytes) {
  constexpr size_t kMin = 512, kSmall = size_t(1) << 20, kGranule = size_t(2) << 20;
  if (bytes <= kMin) return kMin;
  if (bytes <= kSmall) {
    size_t c = kMin;
    while (c < bytes) c <<= 1;
    return c;
  }
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

struct AllocatorStats {
  int64_t raw_allocs = 0, raw_frees = 0;  // calls into the raw allocator
  int64_t hits = 0;                       // allocations served from a free list
  size_t in_use = 0, cached = 0;          // bytes (by size class)
};

class CachingAllocator {
 public:
  explicit CachingAllocator(RawAllocator& raw) : raw_(raw) {}
  ~CachingAllocator() { release_cached(); }  // blocks still in use belong to their owners
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes`; throws std::bad_alloc when even an emptied cache cannot help.
  void* allocate(size_t bytes) {
    const size_t c = size_class(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    auto& list = free_[c];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      stats_.cached -= c;
      stats_.in_use += c;
      ++stats_.hits;
      live_[p] = c;
      return p;
    }
    void* p = raw_.allocate(c);
    if (!p) {  // memory held by other size classes may be enough once returned
      release_locked();
      p = raw_.allocate(c);
      if (!p) throw std::bad_alloc();
    }
    ++stats_.raw_allocs;
    stats_.in_use += c;
    live_[p] = c;
    return p;
  }

  void deallocate(void* p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return;  // not ours: ignoring beats corrupting a free list
    const size_t c = it->second;
    live_.erase(it);
    free_[c].push_back(p);
    stats_.in_use -= c;
    stats_.cached += c;
  }

  void release_cached() {
    std::lock_guard<std::mutex> lock(mu_);
    release_locked();
  }

  AllocatorStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  void release_locked() {
    for (auto& [c, list] : free_) {
      for (void* p : list) {
        raw_.deallocate(p);
        ++stats_.raw_frees;
      }
      stats_.cached -= c * list.size();
      list.clear();
    }
  }

  RawAllocator& raw_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  std::unordered_map<void*, size_t> live_;
  AllocatorStats stats_;
};

}  // namespace tapestry::cuda
