// Buffers, strided views and values (value.hpp).
#include "engine/ir/value.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include <sys/mman.h>

#include "engine/ir/error.hpp"
#include "engine/ir/spin_lock.hpp"

namespace tapestry {

// ---- Buffer: 64-byte aligned; large blocks are kept for reuse. ----
//
// A fresh large block costs a page fault per 4 KiB on first touch (about 0.5 ms per
// MiB under gVisor, more than a map kernel's pass over it), and loops allocate the
// same sizes again and again. So blocks of 1 MiB and more go back to a small cache
// keyed by size instead of to the system.
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kCacheMin = size_t(1) << 20;
constexpr size_t kCacheMaxBytes = size_t(1) << 30;
constexpr size_t kSmallMax = size_t(1) << 16;  // 64 KiB

class BlockCache {
 public:
  ~BlockCache() {
    for (auto& [bytes, p] : blocks_) std::free(p);
  }
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lk(m_);
    auto it = blocks_.find(bytes);
    if (it == blocks_.end()) return nullptr;
    void* p = it->second;
    blocks_.erase(it);
    held_ -= bytes;
    return p;
  }
  // Frees every cached block: a fresh allocation near the budget must not fail for memory
  // the cache keeps.
  void clear() {
    std::lock_guard<std::mutex> lk(m_);
    for (auto& [bytes, p] : blocks_) std::free(p);
    blocks_.clear();
    held_ = 0;
  }
  size_t held() {
    std::lock_guard<std::mutex> lk(m_);
    return held_;
  }
  // False when the cache is full: the caller frees the block.
  bool give(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lk(m_);
    while (held_ + bytes > kCacheMaxBytes && !blocks_.empty()) {
      auto it = std::prev(blocks_.end());  // drop the largest first
      held_ -= it->first;
      std::free(it->second);
      blocks_.erase(it);
    }
    if (bytes > kCacheMaxBytes) return false;
    blocks_.emplace(bytes, p);
    held_ += bytes;
    return true;
  }

 private:
  std::mutex m_;
  std::multimap<size_t, void*> blocks_;
  size_t held_ = 0;
};

BlockCache& block_cache() {
  static BlockCache* c = new BlockCache();  // never destroyed: buffers may outlive statics
  return *c;
}

// Blocks of kHugeMin and more are 2 MiB aligned and asked to be backed by transparent huge
// pages (as numpy does for its large arrays): a pass over a 256 MiB tensor then walks 128 page
// table entries instead of 65,536, and W3's read pass ran 8% faster (docs/performance.md,
// session 38). The kernel honours the request where THP is "madvise" or "always" and ignores
// it otherwise. padded_size makes every size of kHugeMin and more a multiple of 2 MiB, as
// aligned_alloc requires. Freed with std::free like any other block.
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kHugeMin = size_t(16) << 20;

void* allocate_block(size_t size) {
  if (size < kHugeMin || size % kHugePage != 0) return std::aligned_alloc(kAlign, size);
  void* p = std::aligned_alloc(kHugePage, size);
#ifdef MADV_HUGEPAGE
  if (p) madvise(p, size, MADV_HUGEPAGE);  // advice only: a failure leaves 4 KiB pages
#endif
  return p;
}

// Large sizes round up to 1/8 steps of their power of two, so near sizes share blocks.
// Small sizes (up to kSmallMax) round up to a power of two: a size class of SmallCache.
size_t padded_size(size_t bytes) {
  size_t b = (bytes + kAlign - 1) / kAlign * kAlign;
  if (b == 0) b = kAlign;
  if (b <= kSmallMax) return std::bit_ceil(b);
  if (b < kCacheMin) return b;
  size_t p = kCacheMin;
  while (p * 2 <= b) p *= 2;
  size_t step = p / 8;
  return (b + step - 1) / step * step;
}

// Small blocks: a loop of observations on small tensors (a CG solver's vectors and
// scalars) allocates and frees the same few sizes thousands of times a second. glibc's
// aligned_alloc of >= 1 KiB takes its large-request path (malloc_consolidate over the
// fastbins every time), so small blocks go back to a free list per size class instead.
// Bounded: 2 MiB per class and 16 MiB in all; the rest go to the system. (Lua frees dead
// tensors in batches when its collector runs, so a loop's blocks come back a thousand at once.)
class SmallCache {
 public:
  static constexpr int kClasses = std::countr_zero(kSmallMax / kAlign) + 1;  // 64 B .. kSmallMax

  ~SmallCache() {
    for (auto& c : free_)
      for (void* p : c) std::free(p);
  }
  static int class_of(size_t size) { return std::countr_zero(size / kAlign); }
  void* take(size_t size) {
    std::vector<void*>& c = free_[class_of(size)];
    std::lock_guard<SpinLock> lk(m_);
    if (c.empty()) return nullptr;
    void* p = c.back();
    c.pop_back();
    held_ -= size;
    return p;
  }
  bool give(void* p, size_t size) {
    std::vector<void*>& c = free_[class_of(size)];
    std::lock_guard<SpinLock> lk(m_);
    if ((c.size() + 1) * size > kSmallClassMax || held_ + size > kSmallHeldMax) return false;
    try {
      c.push_back(p);
    } catch (const std::bad_alloc&) {  // called from ~Buffer: the caller frees the block instead
      return false;
    }
    held_ += size;
    return true;
  }

 private:
  static constexpr size_t kSmallClassMax = size_t(2) << 20;
  static constexpr size_t kSmallHeldMax = size_t(16) << 20;
  SpinLock m_;  // taken twice per small value: std::mutex was ~1% of a CG iteration
  size_t held_ = 0;
  std::vector<void*> free_[kClasses];
};

SmallCache& small_cache() {
  static SmallCache* c = new SmallCache();  // never destroyed: buffers may outlive statics
  return *c;
}

}  // namespace

namespace {
std::atomic<uint64_t> g_total_allocated{0};
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_budget{0};

std::string refusal(const std::string& what, int64_t in_use, int64_t budget) {
  return cat_str("out of memory: ", what, " would pass this rank's memory budget of ", human_bytes(budget),
                 " (", human_bytes(static_cast<double>(in_use)),
                 " in use; the budget is --memory-per-rank, by default the memory available at start "
                 "less a margin)");
}

// Refused by the budget, with what Value::alloc needs to say which tensor.
struct Refused : OutOfMemory {
  Refused(size_t b, int64_t u, int64_t g)
      : OutOfMemory(refusal(human_bytes(static_cast<double>(b)) + " more", u, g)),
        bytes(b),
        in_use(u),
        budget(g) {}
  size_t bytes;
  int64_t in_use, budget;
};

std::mutex g_pressure_mu;
MemoryPressureHandler g_pressure;  // under g_pressure_mu
std::atomic<uint64_t> g_pressure_events{0};
thread_local bool t_in_pressure = false;  // the handler's own allocations are not helped again

// Asks the pressure handler to free `need` bytes; whether it freed any.
bool relieve(int64_t need) {
  if (t_in_pressure) return false;
  MemoryPressureHandler h;
  {
    std::lock_guard lock(g_pressure_mu);
    h = g_pressure;
  }
  if (!h) return false;
  g_pressure_events.fetch_add(1, std::memory_order_relaxed);
  t_in_pressure = true;
  struct Reset {
    ~Reset() { t_in_pressure = false; }
  } reset;
  return h(need);
}

// Takes `bytes` out of the budget, or throws Refused having taken nothing. Past the budget the
// pressure handler (the session's spilling) may free memory first, as often as it frees some.
void reserve(size_t bytes) {
  const auto want = static_cast<int64_t>(bytes);  // at most 2^53: shapes hold 2^50 elements
  for (int round = 0;; ++round) {
    const int64_t live = g_live.fetch_add(want, std::memory_order_relaxed) + want;
    const int64_t budget = g_budget.load(std::memory_order_relaxed);
    if (budget <= 0 || live <= budget) return;
    g_live.fetch_sub(want, std::memory_order_relaxed);
    if (round >= 256 || !relieve(live - budget)) throw Refused(bytes, live - want, budget);
  }
}
}  // namespace

uint64_t memory_pressure_events() { return g_pressure_events.load(std::memory_order_relaxed); }

void set_memory_pressure_handler(MemoryPressureHandler h) {
  std::lock_guard lock(g_pressure_mu);
  g_pressure = std::move(h);
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && u < 6) b /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

void set_memory_budget(int64_t bytes) { g_budget.store(std::max<int64_t>(0, bytes)); }

int64_t memory_budget() { return g_budget.load(); }

int64_t Buffer::live_bytes() { return g_live.load(std::memory_order_relaxed); }

uint64_t Buffer::total_allocated() { return g_total_allocated.load(std::memory_order_relaxed); }

Buffer::Buffer(size_t bytes) : data_(nullptr), bytes_(bytes) {
  reserve(bytes);
  size_t size = padded_size(bytes);
  if (size <= kSmallMax) data_ = small_cache().take(size);
  else if (size >= kCacheMin) data_ = block_cache().take(size);
  if (!data_) {
    // Near the budget, blocks kept for reuse are given back before asking the system for more.
    const int64_t budget = g_budget.load(std::memory_order_relaxed);
    if (budget > 0 &&
        g_live.load(std::memory_order_relaxed) + static_cast<int64_t>(block_cache().held()) > budget)
      block_cache().clear();
    data_ = allocate_block(size);
  }
  if (!data_) {
    g_live.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
    throw std::bad_alloc();
  }
  g_total_allocated.fetch_add(bytes, std::memory_order_relaxed);
}

Buffer::~Buffer() {
  g_live.fetch_sub(static_cast<int64_t>(bytes_), std::memory_order_relaxed);
  size_t size = padded_size(bytes_);
  if (size <= kSmallMax && small_cache().give(data_, size)) return;
  if (size >= kCacheMin && block_cache().give(data_, size)) return;
  std::free(data_);
}

// ---- View ----

int64_t View::numel() const { return tapestry::numel(shape); }

bool View::is_contiguous() const {
  int64_t expect = 1;
  for (int d = rank() - 1; d >= 0; --d) {
    if (shape[d] == 0) return true;
    if (shape[d] != 1 && strides[d] != expect) return false;
    expect *= shape[d];
  }
  return true;
}

View View::permuted(const std::vector<int>& perm) const {
  internal_check(static_cast<int>(perm.size()) == rank());
  View v = *this;
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    int p = perm[i];
    internal_check(p >= 0 && p < rank() && !seen[p]);
    seen[p] = true;
    v.shape[i] = shape[p];
    v.strides[i] = strides[p];
  }
  return v;
}

View View::expanded(const Shape& to) const {
  internal_check(to.size() >= shape.size());
  View v = *this;
  size_t lead = to.size() - shape.size();
  v.shape = to;
  v.strides.assign(to.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t from = shape[i];
    internal_check(from == to[lead + i] || from == 1);
    v.strides[lead + i] = from == to[lead + i] ? strides[i] : 0;
  }
  return v;
}

View View::sliced(const std::vector<int64_t>& start, const std::vector<int64_t>& step,
                  const Shape& count) const {
  internal_check(start.size() == shape.size() && step.size() == shape.size() && count.size() == shape.size());
  View v = *this;
  for (size_t d = 0; d < shape.size(); ++d) {
    internal_check(count[d] >= 0 && step[d] != 0);
    if (count[d] > 0) {
      int64_t last = start[d] + (count[d] - 1) * step[d];
      internal_check(start[d] >= 0 && start[d] < shape[d] && last >= 0 && last < shape[d]);
      v.offset += start[d] * strides[d];
    }
    v.shape[d] = count[d];
    v.strides[d] = strides[d] * step[d];
  }
  return v;
}

// numpy's _attempt_nocopy_reshape: groups of old and new dims with equal products
// must each be contiguous among themselves.
bool View::try_reshape(const Shape& to, View& out) const {
  internal_check(tapestry::numel(to) == numel());
  // out is written field by field at the end (it may be *this): copying the whole View twice
  // cost four allocations per reshape, two of a CG step's matvec.
  const auto set = [&](Strides st) {
    out.buf = buf;
    out.dtype = dtype;
    out.offset = offset;
    out.shape = to;
    out.strides = std::move(st);
  };
  if (numel() == 0 || is_contiguous()) {
    set(contiguous_strides(to));
    return true;
  }
  Shape od;
  Strides os;
  for (int d = 0; d < rank(); ++d) {
    if (shape[d] != 1) {
      od.push_back(shape[d]);
      os.push_back(strides[d]);
    }
  }
  const size_t ond = od.size(), nnd = to.size();
  Strides ns(nnd, 0);
  size_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nnd && oi < ond) {
    int64_t np = to[ni], op = od[oi];
    while (np != op) {
      if (np < op) np *= to[nj++];
      else op *= od[oj++];
    }
    for (size_t ok = oi; ok + 1 < oj; ++ok) {
      if (os[ok] != od[ok + 1] * os[ok + 1]) return false;
    }
    ns[nj - 1] = os[oj - 1];
    for (size_t nk = nj - 1; nk > ni; --nk) ns[nk - 1] = ns[nk] * to[nk];
    ni = nj++;
    oi = oj++;
  }
  int64_t last = ni >= 1 ? ns[ni - 1] : 1;
  for (size_t nk = ni; nk < nnd; ++nk) ns[nk] = last;
  set(std::move(ns));
  return true;
}

// ---- Value ----

std::shared_ptr<Value> Value::alloc(DType t, const Shape& s) {
  auto val = std::make_shared<Value>();
  int64_t n = tapestry::numel(s);
  internal_check(n >= 0);
  try {
    val->v.buf = std::make_shared<Buffer>(static_cast<size_t>(n) * dtype_size(t));
  } catch (const Refused& e) {
    throw OutOfMemory(refusal(cat_str("a ", dtype_name(t), " tensor of shape ", shape_str(s), " (",
                                      human_bytes(static_cast<double>(e.bytes)), ")"),
                              e.in_use, e.budget));
  }
  val->v.dtype = t;
  val->v.shape = s;
  val->v.strides = contiguous_strides(s);
  val->v.offset = 0;
  return val;
}

}  // namespace tapestry
