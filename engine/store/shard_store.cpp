#include "engine/store/shard_store.hpp"

#include "engine/ir/error.hpp"
#include "kernels/cpu/kernels.hpp"

namespace tapestry {

namespace {

int64_t payload(const View& v) { return v.numel() * static_cast<int64_t>(dtype_size(v.dtype)); }

}  // namespace

ShardStore& shard_store() {
  static ShardStore s;
  return s;
}

void ShardStore::put(int rank, uint64_t key, const poly::Box& box, const View& v) {
  View kept = v;
  if (!v.buf || !v.is_contiguous() || static_cast<int64_t>(v.buf->bytes()) > payload(v)) {
    auto copy = Value::alloc(v.dtype, v.shape);
    cpu::copy_view(v, copy->v);
    kept = copy->v;
  }
  std::lock_guard<std::mutex> lock(mu_);
  pieces_[{key, rank}].push_back({box, std::move(kept)});
}

std::optional<View> ShardStore::find(int rank, uint64_t key, const poly::Box& box) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pieces_.find({key, rank});
  if (it == pieces_.end()) return std::nullopt;
  for (const Piece& p : it->second) {
    if (!p.box.contains(box)) continue;
    std::vector<int64_t> start(p.view.rank(), 0), step(p.view.rank(), 1);
    Shape count = p.view.shape;
    for (int d = 0; d < box.rank(); ++d) {
      start[d] = box.lo[d] - p.box.lo[d];
      count[d] = box.extent(d);
    }
    return p.view.sliced(start, step, count);
  }
  return std::nullopt;
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

}  // namespace tapestry
