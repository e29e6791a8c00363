#include "engine/plan/piece_index.hpp"

#include <algorithm>
#include <cmath>

#include "engine/ir/error.hpp"

namespace tapestry::plan {

namespace {
constexpr int64_t kMaxCells = 4096;  // a whole-tensor piece is listed in every cell: 16 KiB
constexpr size_t kGridAt = 32;       // fewer pieces are scanned one by one
}  // namespace

void PieceIndex::build_grid() {
  const size_t r = shape_.size();
  const int64_t want = std::clamp<int64_t>(4 * static_cast<int64_t>(pieces_.size()), 1, kMaxCells);
  // Cells shaped like the pieces: along each dim about as many as pieces fit across it (their
  // mean extent), scaled down together to `want`, so a row-split tensor gets rows of cells and
  // each piece is listed in about one cell, not in a whole row of square cells.
  std::vector<double> across(r, 1.0);
  double total_wanted = 1;
  for (size_t d = 0; d < r; ++d) {
    double extent = 0;
    for (const Piece& p : pieces_) extent += double(std::max<int64_t>(1, p.box.hi[d] - p.box.lo[d] + 1));
    across[d] = std::max(1.0, double(shape_[d]) * double(pieces_.size()) / std::max(1.0, extent));
    total_wanted *= across[d];
  }
  const double shrink = r == 0 ? 1.0 : std::pow(std::max(1.0, total_wanted / double(want)), 1.0 / double(r));
  cells_per_dim_.clear();
  cell_extent_.clear();
  int64_t total = 1;
  for (size_t d = 0; d < r; ++d) {
    const auto n = static_cast<int64_t>(
        std::clamp(std::floor(across[d] / shrink + 1e-9), 1.0, double(std::max<int64_t>(1, shape_[d]))));
    const int64_t fit = std::max<int64_t>(1, std::min(n, kMaxCells / total));
    cells_per_dim_.push_back(fit);
    cell_extent_.push_back(std::max<int64_t>(1, (shape_[d] + fit - 1) / fit));
    total *= fit;
  }
  cells_.assign(static_cast<size_t>(total), {});
  big_.clear();
  for (const Piece& p : pieces_) list(p.seq);
  grid_for_ = pieces_.size();
}

bool PieceIndex::big(const poly::Box& b) const {
  int64_t spanned = 1;
  for (size_t d = 0; d < cells_per_dim_.size(); ++d) {
    const int64_t lo = std::clamp<int64_t>(b.lo[d] / cell_extent_[d], 0, cells_per_dim_[d] - 1);
    const int64_t hi = std::clamp<int64_t>(b.hi[d] / cell_extent_[d], 0, cells_per_dim_[d] - 1);
    spanned *= std::max<int64_t>(0, hi - lo + 1);
  }
  return spanned * 4 > static_cast<int64_t>(cells_.size());
}

void PieceIndex::list(uint32_t id) {
  const poly::Box& b = pieces_[id].box;
  if (big(b)) big_.push_back(id);
  else cells_of(b, [&](size_t c) { cells_[c].push_back(id); });
}

template <class F> void PieceIndex::cells_of(const poly::Box& b, F&& f) const {
  const size_t r = cells_per_dim_.size();
  if (r == 0) return f(size_t{0});
  std::vector<int64_t>&lo = lo_, &hi = hi_, &at = at_;  // scratch: called once per piece and query
  lo.resize(r), hi.resize(r), at.resize(r);
  for (size_t d = 0; d < r; ++d) {
    lo[d] = std::clamp<int64_t>(b.lo[d] / cell_extent_[d], 0, cells_per_dim_[d] - 1);
    hi[d] = std::clamp<int64_t>(b.hi[d] / cell_extent_[d], 0, cells_per_dim_[d] - 1);
    if (hi[d] < lo[d]) return;  // an empty box
    at[d] = lo[d];
  }
  while (true) {
    size_t cell = 0;
    for (size_t d = 0; d < r; ++d)
      cell = cell * static_cast<size_t>(cells_per_dim_[d]) + static_cast<size_t>(at[d]);
    f(cell);
    size_t d = r;
    while (d > 0 && at[d - 1] == hi[d - 1]) at[d - 1] = lo[d - 1], --d;
    if (d == 0) return;
    ++at[d - 1];
  }
}

void PieceIndex::add(const poly::Box& box, int rank) {
  internal_check(box.rank() == static_cast<int>(shape_.size()));
  const auto id = static_cast<uint32_t>(pieces_.size());
  pieces_.push_back(Piece{box, rank, id});
  seen_.push_back(0);
  if (grid_for_ > 0 && pieces_.size() < 2 * grid_for_) list(id);
  else if (pieces_.size() >= kGridAt && (grid_for_ == 0 || pieces_.size() >= 2 * grid_for_))
    build_grid();  // rebuilt as the pieces double: amortized, and its cells fit their count
}

std::vector<const PieceIndex::Piece*> PieceIndex::overlapping(const poly::Box& q) const {
  std::vector<const Piece*> out;
  if (grid_for_ == 0) {  // few pieces: look at each, already in rank-then-added order once sorted
    for (const Piece& p : pieces_)
      if (overlaps(p.box, q)) out.push_back(&p);
    std::stable_sort(out.begin(), out.end(),
                     [](const Piece* a, const Piece* b) { return a->rank < b->rank; });
    return out;
  }
  if (++query_ == 0) std::fill(seen_.begin(), seen_.end(), 0), query_ = 1;
  for (uint32_t id : big_)
    if (overlaps(pieces_[id].box, q)) out.push_back(&pieces_[id]);
  cells_of(q, [&](size_t c) {
    for (uint32_t id : cells_[c]) {
      if (seen_[id] == query_) continue;
      seen_[id] = query_;
      if (overlaps(pieces_[id].box, q)) out.push_back(&pieces_[id]);
    }
  });
  std::sort(out.begin(), out.end(), [](const Piece* a, const Piece* b) {
    return a->rank != b->rank ? a->rank < b->rank : a->seq < b->seq;
  });
  return out;
}

}  // namespace tapestry::plan
