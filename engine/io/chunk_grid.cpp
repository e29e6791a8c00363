// Chunk grids against shards (chunk_grid.hpp).
#include "engine/io/chunk_grid.hpp"

#include <algorithm>
#include <numeric>

#include "engine/ir/error.hpp"

namespace tapestry::io {

void for_each_chunk(const Shape& shape, const std::vector<int64_t>& chunks,
                    const std::function<void(const poly::Box&)>& fn) {
  const int r = static_cast<int>(shape.size());
  internal_check(chunks.size() == shape.size());
  if (r == 0) return fn(poly::Box::of_shape({}));
  for (int64_t n : shape)
    if (n == 0) return;  // an empty array has no chunk (zarr reads a missing one as fill)
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);
  while (true) {
    poly::Coords lo(static_cast<size_t>(r)), hi(static_cast<size_t>(r));
    for (int d = 0; d < r; ++d) {
      lo[d] = idx[d] * chunks[d];
      hi[d] = std::min(shape[d], lo[d] + chunks[d]) - 1;
    }
    fn(poly::Box(lo, hi));
    int d = r - 1;
    for (; d >= 0 && (idx[d] + 1) * chunks[d] >= shape[d]; --d) idx[d] = 0;
    if (d < 0) return;
    ++idx[d];
  }
}

std::vector<int64_t> chunks_for_shards(const Shape& shape, DType dtype,
                                       const std::vector<plan::Shard>& shards, int64_t target_bytes) {
  const int r = static_cast<int>(shape.size());
  std::vector<int64_t> c(static_cast<size_t>(r), 1);
  if (r == 0) return c;
  for (int d = 0; d < r; ++d) {
    c[d] = 1;
    for (const plan::Shard& s : shards)
      if (!s.box.empty()) c[d] = std::max(c[d], s.box.extent(d));
  }
  // Rows per chunk for about target_bytes, and the row boundaries the chunks should respect.
  int64_t row = dtype_size(dtype);
  for (int d = 1; d < r; ++d) row *= c[d];
  const int64_t want = std::clamp<int64_t>(target_bytes / std::max<int64_t>(row, 1), 1, c[0]);
  if (want == c[0]) return c;
  int64_t g = c[0];
  for (const plan::Shard& s : shards)
    if (!s.box.empty()) g = std::gcd(g, s.box.lo[0]);
  // The largest divisor of g no larger than want: chunks that never straddle a boundary.
  int64_t best = 1;
  for (int64_t k = 1; k * k <= g; ++k)
    if (g % k == 0) {
      if (k <= want) best = std::max(best, k);
      if (g / k <= want) best = std::max(best, g / k);
    }
  // Too small a divisor (a prime number of rows) costs more in chunk overhead than the few
  // straddling chunks rank 0 writes.
  c[0] = 2 * best >= want ? best : want;
  return c;
}

ChunkWriters chunk_writers(const Shape& shape, const std::vector<int64_t>& chunks,
                           const std::vector<plan::Shard>& shards) {
  ChunkWriters w;
  int64_t n = 0;
  std::vector<const plan::Shard*> holders;
  for_each_chunk(shape, chunks, [&](const poly::Box& b) {
    holders.clear();
    for (const plan::Shard& s : shards)
      if (s.box.contains(b)) holders.push_back(&s);
    if (holders.empty()) {
      w.shared.push_back(b);
    } else {
      const plan::Shard* h = holders[static_cast<size_t>(n % static_cast<int64_t>(holders.size()))];
      w.owned.push_back(plan::Shard{h->tensor, b, h->rank});
    }
    ++n;
  });
  return w;
}

std::vector<poly::Box> merge_boxes(std::vector<poly::Box> boxes) {
  bool merged = true;
  while (merged && boxes.size() > 1) {
    merged = false;
    const int r = boxes[0].rank();
    for (int d = r - 1; d >= 0; --d) {
      // Along d: sort by every other dimension, then by d, and join neighbours that touch.
      std::sort(boxes.begin(), boxes.end(), [&](const poly::Box& a, const poly::Box& b) {
        for (int k = 0; k < r; ++k) {
          if (k == d) continue;
          if (a.lo[k] != b.lo[k]) return a.lo[k] < b.lo[k];
          if (a.hi[k] != b.hi[k]) return a.hi[k] < b.hi[k];
        }
        return a.lo[d] < b.lo[d];
      });
      std::vector<poly::Box> out;
      for (const poly::Box& b : boxes) {
        if (!out.empty()) {
          poly::Box& last = out.back();
          bool same = last.hi[d] + 1 == b.lo[d];
          for (int k = 0; k < r && same; ++k)
            if (k != d) same = last.lo[k] == b.lo[k] && last.hi[k] == b.hi[k];
          if (same) {
            last.hi[d] = b.hi[d];
            merged = true;
            continue;
          }
        }
        out.push_back(b);
      }
      boxes = std::move(out);
    }
  }
  return boxes;
}

}  // namespace tapestry::io
