#include "engine/store/shard_store.hpp"

#include <mutex>

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
  pieces_[{key, rank}].push_back({box, std::move(kept), {}, nullptr});
}

void ShardStore::put(int rank, uint64_t key, const poly::Box& box, const DeviceView& v, DeviceBackend& dev) {
  DeviceView kept = v;
  if (!v.is_contiguous() || v.layout.offset != 0 ||
      static_cast<int64_t>(v.mem->bytes()) > payload(v.layout)) {
    kept = device_alloc(dev, v.dtype(), v.shape());
    dev.copy(v, kept);
  }
  std::lock_guard<std::mutex> lock(mu_);
  pieces_[{key, rank}].push_back({box, kept.layout, kept, &dev});
}

const ShardStore::Piece* ShardStore::covering(int rank, uint64_t key, const poly::Box& box) const {
  auto it = pieces_.find({key, rank});
  if (it == pieces_.end()) return nullptr;
  for (const Piece& p : it->second)
    if (p.box.contains(box)) return &p;
  return nullptr;
}

std::optional<ShardStore::Found> ShardStore::find_piece(int rank, uint64_t key, const poly::Box& box) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Piece* p = covering(rank, key, box);
  if (!p) return std::nullopt;
  const View w = window(p->view, p->box, box);
  if (p->dev.mem) return Found{View{}, p->dev.with(w)};
  return Found{w, DeviceView{}};
}

std::optional<View> ShardStore::find(int rank, uint64_t key, const poly::Box& box) const {
  DeviceView on_dev;
  DeviceBackend* dev = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Piece* p = covering(rank, key, box);
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
  for (auto it = pieces_.lower_bound({key, -1}); it != pieces_.end() && it->first.first == key;)
    it = pieces_.erase(it);
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
