#include "engine/poly/view_window.hpp"

namespace tapestry {

View window(const View& v, const poly::Box& origin, const poly::Box& want) {
  std::vector<int64_t> start(v.rank(), 0), step(v.rank(), 1);
  Shape count = v.shape;
  for (int d = 0; d < origin.rank(); ++d) {
    start[d] = want.lo[d] - origin.lo[d];
    count[d] = want.extent(d);
  }
  return v.sliced(start, step, count);
}

}  // namespace tapestry
