#include "engine/store/shard_store.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <tuple>

#include "engine/ir/error.hpp"
#include "engine/poly/view_window.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

namespace {

int64_t payload(const View& v) { return v.numel() * static_cast<int64_t>(dtype_size(v.dtype)); }

}  // namespace

void ShardStore::put(int rank, uint64_t key, const poly::Box& box, const View& v) {
  View kept = v;
  if (!v.buf || !v.is_contiguous() || static_cast<int64_t>(v.buf->bytes()) > payload(v)) {
    auto copy = Value::alloc(v.dtype, v.shape);
    cpu::copy_view(v, copy->v);
    kept = copy->v;
  }
  std::lock_guard<std::mutex> lock(mu_);
  pieces_[{key, rank}].push_back({box, std::move(kept), {}, nullptr, {}, ++tick_, {}});
}

void ShardStore::put(int rank, uint64_t key, const poly::Box& box, const DeviceView& v, DeviceBackend& dev) {
  DeviceView kept = v;
  if (!v.is_contiguous() || v.layout.offset != 0 ||
      static_cast<int64_t>(v.mem->bytes()) > payload(v.layout)) {
    kept = device_alloc(dev, v.dtype(), v.shape());
    dev.copy(v, kept);
  }
  std::lock_guard<std::mutex> lock(mu_);
  pieces_[{key, rank}].push_back({box, kept.layout, kept, &dev, {}, ++tick_, {}});
}

const ShardStore::Piece* ShardStore::covering(int rank, uint64_t key, const poly::Box& box) const {
  auto it = pieces_.find({key, rank});
  if (it == pieces_.end()) return nullptr;
  for (const Piece& p : it->second)
    if (p.box.contains(box)) return &p;
  return nullptr;
}

const ShardStore::Piece* ShardStore::resident(int rank, uint64_t key, const poly::Box& box,
                                              std::unique_lock<std::mutex>& lock) const {
  for (;;) {
    auto* p = const_cast<Piece*>(covering(rank, key, box));
    if (!p) return nullptr;
    p->last_use = ++tick_;
    if (p->file.empty()) return p;
    // Read back outside the lock: the allocation may make room by spilling other pieces.
    const std::string file = p->file;
    const DType dtype = p->view.dtype;
    const Shape shape = p->view.shape;
    lock.unlock();
    std::shared_ptr<Value> v = Value::alloc(dtype, shape);
    const size_t n = static_cast<size_t>(v->v.numel()) * dtype_size(dtype);
    FILE* f = std::fopen(file.c_str(), "rb");
    const bool ok = f && std::fread(v->v.byte_ptr(), 1, n, f) == n;
    const int err = errno;
    if (f) std::fclose(f);
    if (!ok)
      throw Error(cat_str("cannot read back the spilled piece of stored tensor %", key, " on rank ", rank,
                          " from '", file, "': ", f ? "the file is short" : std::strerror(err)));
    lock.lock();
    p = const_cast<Piece*>(covering(rank, key, box));
    if (p && p->file == file) {  // else another thread read it back first, or it was dropped
      p->view = v->v;
      p->copy = file;
      p->file.clear();
      ++readbacks_;
    }
  }
}

std::optional<ShardStore::Found> ShardStore::find_piece(int rank, uint64_t key, const poly::Box& box) const {
  std::unique_lock<std::mutex> lock(mu_);
  const Piece* p = resident(rank, key, box, lock);
  if (!p) return std::nullopt;
  const View w = window(p->view, p->box, box);
  if (p->dev.mem) return Found{View{}, p->dev.with(w)};
  return Found{w, DeviceView{}};
}

std::optional<View> ShardStore::find(int rank, uint64_t key, const poly::Box& box) const {
  DeviceView on_dev;
  DeviceBackend* dev = nullptr;
  {
    std::unique_lock<std::mutex> lock(mu_);
    const Piece* p = resident(rank, key, box, lock);
    if (!p) return std::nullopt;
    const View w = window(p->view, p->box, box);
    if (!p->dev.mem) return w;
    on_dev = p->dev.with(w);  // keeps the memory alive past a concurrent drop
    dev = p->backend;
  }
  auto copy = Value::alloc(on_dev.dtype(), on_dev.shape());
  dev->download(on_dev, copy->v);
  return copy->v;
}

int64_t ShardStore::device_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t b = 0;
  for (const auto& [k, ps] : pieces_)
    for (const Piece& p : ps)
      if (p.dev.mem) b += payload(p.view);
  return b;
}

void ShardStore::drop(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = pieces_.lower_bound({key, -1}); it != pieces_.end() && it->first.first == key;) {
    for (const Piece& p : it->second) {
      if (!p.file.empty()) std::remove(p.file.c_str());
      if (!p.copy.empty()) std::remove(p.copy.c_str());
    }
    it = pieces_.erase(it);
  }
}

ShardStore::~ShardStore() {
  for (const auto& [k, ps] : pieces_)
    for (const Piece& p : ps) {
      if (!p.file.empty()) std::remove(p.file.c_str());
      if (!p.copy.empty()) std::remove(p.copy.c_str());
    }
}

int64_t ShardStore::spill_coldest(int64_t need, const std::string& dir, bool fail_writes,
                                  const std::function<std::string(uint64_t)>& what) {
  std::lock_guard<std::mutex> lock(mu_);
  // Host pieces in memory that only the store refers to (a plan running holds windows on the
  // pieces it reads), coldest first.
  std::vector<std::tuple<uint64_t, uint64_t, int, size_t>> cold;  // tick, key, rank, index
  for (const auto& [kr, ps] : pieces_)
    for (size_t i = 0; i < ps.size(); ++i) {
      const Piece& p = ps[i];
      if (p.file.empty() && !p.dev.mem && p.view.buf && p.view.buf.use_count() == 1)
        cold.emplace_back(p.last_use, kr.first, kr.second, i);
    }
  std::sort(cold.begin(), cold.end());
  int64_t freed = 0;
  static std::atomic<uint64_t> next{0};
  for (const auto& [tick, key, rank, i] : cold) {
    if (freed >= need) break;
    Piece& p = pieces_[{key, rank}][i];
    const int64_t bytes = payload(p.view);
    if (!p.copy.empty()) {  // its file is still there: nothing to write
      p.file = std::move(p.copy);
      p.copy.clear();
      p.view.buf.reset();
      freed += bytes;
      ++spills_;
      continue;
    }
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string path = cat_str(dir, "/k", key, "-r", rank, "-s", ++next);
    auto failed = [&](const std::string& why) {
      std::remove(path.c_str());
      return Error(cat_str("cannot spill ", what ? what(key) : cat_str("%", key), " (its piece on rank ",
                           rank, ", ", human_bytes(static_cast<double>(bytes)), ") to '", path, "': ", why));
    };
    if (fail_writes) throw failed("No space left on device (injected: TAPESTRY_SPILL_FAULT)");
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw failed(std::strerror(errno));
    const bool ok =
        std::fwrite(p.view.byte_ptr(), 1, static_cast<size_t>(bytes), f) == static_cast<size_t>(bytes);
    const int err = errno;
    if (std::fclose(f) != 0 || !ok) throw failed(std::strerror(ok ? errno : err));
    p.file = path;
    p.view.buf.reset();
    freed += bytes;
    ++spills_;
    spill_bytes_ += bytes;
  }
  return freed;
}

int64_t ShardStore::bytes(int rank, uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pieces_.find({key, rank});
  int64_t b = 0;
  if (it != pieces_.end())
    for (const Piece& p : it->second) b += payload(p.view);
  return b;
}

int64_t ShardStore::total_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t b = 0;
  for (const auto& [k, ps] : pieces_)
    for (const Piece& p : ps) b += payload(p.view);
  return b;
}

bool ShardStore::has(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pieces_.lower_bound({key, -1});
  return it != pieces_.end() && it->first.first == key;
}

std::vector<std::pair<uint64_t, int>> ShardStore::holdings() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<uint64_t, int>> out;
  for (const auto& [k, ps] : pieces_)
    if (!ps.empty()) out.push_back(k);
  return out;
}

std::vector<std::pair<poly::Box, View>> ShardStore::pieces(uint64_t key, int rank) const {
  std::vector<poly::Box> boxes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pieces_.find({key, rank});
    if (it == pieces_.end()) return {};
    for (const Piece& p : it->second) boxes.push_back(p.box);
  }
  std::vector<std::pair<poly::Box, View>> out;
  for (const poly::Box& b : boxes)
    if (std::optional<View> v = find(rank, key, b)) out.emplace_back(b, *v);
  return out;
}

}  // namespace tapestry
