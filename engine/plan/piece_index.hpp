// Where the pieces of one tensor lie, found by box: past a few dozen pieces a uniform grid of
// cells over the tensor's shape, each listing the pieces that overlap it, so lowering a plan on
// thousands of ranks asks only the few pieces near a slice instead of every rank. The grid grows
// with the pieces (a few cells per piece), so a tensor on two ranks costs nothing to index.
//   PieceIndex ix(shape);  ix.add(box, rank);
//   for (const PieceIndex::Piece* p : ix.overlapping(need)) ...   // by rank, then as added
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/shape.hpp"
#include "engine/poly/box.hpp"

namespace tapestry::plan {

class PieceIndex {
 public:
  struct Piece {
    poly::Box box;
    int rank;
    uint32_t seq;  // the order pieces were added in
  };

  explicit PieceIndex(Shape shape) : shape_(std::move(shape)) {}
  void add(const poly::Box& box, int rank);
  // The pieces that overlap `q` (a box of the tensor), sorted by rank, then in the order added.
  std::vector<const Piece*> overlapping(const poly::Box& q) const;
  bool empty() const { return pieces_.empty(); }

 private:
  // Calls f(cell) for every cell that `b` overlaps.
  template <class F> void cells_of(const poly::Box& b, F&& f) const;
  // Whether `b` spans more than a quarter of the cells: such a piece (a whole copy a broadcast
  // left on a rank) is kept in big_ and looked at by every query, so replicas cost O(1) to index.
  bool big(const poly::Box& b) const;
  void list(uint32_t id);  // into big_ or the cells it overlaps
  void build_grid();       // for the pieces there are now: about four cells each, at most 4096

  Shape shape_;
  size_t grid_for_ = 0;  // pieces when the grid was built; 0: no grid, scan them all
  std::vector<int64_t> cells_per_dim_, cell_extent_;
  std::vector<std::vector<uint32_t>> cells_;  // piece ids per cell
  std::vector<uint32_t> big_;                 // piece ids of big() pieces
  std::vector<Piece> pieces_;
  mutable std::vector<uint32_t> seen_;  // per piece: the query that last listed it
  mutable uint32_t query_ = 0;
  mutable std::vector<int64_t> lo_, hi_, at_;  // cells_of's cell ranges
};

}  // namespace tapestry::plan
