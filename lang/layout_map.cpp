// The shard map drawn by :layout: a character grid scaled to the terminal, one colour
// (and digit) per rank.
#include <algorithm>
#include <sstream>

#include "engine/ir/error.hpp"
#include "lang/plan_lua.hpp"

namespace tapestry {

namespace {

constexpr int kMaxCols = 48, kMaxRows = 16, kMaxFaces = 4;

// The rank holding element (coords) of the tensor, or -1.
int owner(const std::vector<plan::Shard>& shards, const std::vector<int64_t>& c) {
  for (const plan::Shard& s : shards) {
    bool in = true;
    for (size_t d = 0; d < c.size() && in; ++d) in = c[d] >= s.box.lo[d] && c[d] <= s.box.hi[d];
    if (in) return s.rank;
  }
  return -1;
}

std::string cell(int rank, bool colour) {
  if (rank < 0) return "?";
  const char digit = rank < 10 ? static_cast<char>('0' + rank) : static_cast<char>('a' + (rank - 10) % 26);
  if (!colour) return std::string(1, digit);
  static const int kColours[] = {41, 42, 43, 44, 45, 46, 101, 102, 103, 104, 105, 106};
  return cat_str("\x1b[30;", kColours[rank % 12], "m", digit, "\x1b[0m");
}

// One 2-D face: rows over dim `rd`, cols over dim `cd`, other coords fixed in `base`.
void face(std::ostringstream& os, const Shape& shape, const std::vector<plan::Shard>& shards,
          std::vector<int64_t> base, int rd, int cd, bool colour) {
  const int64_t rows = rd < 0 ? 1 : shape[rd], cols = shape[cd];
  const int nr = static_cast<int>(std::min<int64_t>(rows, kMaxRows));
  const int nc = static_cast<int>(std::min<int64_t>(cols, kMaxCols));
  for (int i = 0; i < nr; ++i) {
    os << "  ";
    for (int j = 0; j < nc; ++j) {
      if (rd >= 0) base[rd] = i * rows / nr;
      base[cd] = j * cols / nc;
      os << cell(owner(shards, base), colour);
    }
    os << "\n";
  }
}

}  // namespace

std::string render_layout(const Shape& shape, const std::vector<plan::Shard>& shards,
                          const std::string& summary, bool colour) {
  std::ostringstream os;
  os << shape_str(shape) << ": " << summary << "\n";
  std::vector<int> ranks;
  for (const plan::Shard& s : shards) ranks.push_back(s.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (const plan::Shard& s : shards) {
    os << "  " << cell(s.rank, colour) << " rank " << s.rank << ": ";
    for (size_t d = 0; d < shape.size(); ++d)
      os << (d ? " x " : "") << s.box.lo[d] + 1 << ".." << s.box.hi[d] + 1;
    os << "\n";
  }
  const int r = static_cast<int>(shape.size());
  if (r == 0) return os.str();
  std::vector<int64_t> base(r, 0);
  if (r <= 2) {
    face(os, shape, shards, base, r == 2 ? 0 : -1, r - 1, colour);
    return os.str();
  }
  // n-D: faces over the last two dims, for the first indices of the leading dims.
  int64_t faces = 1;
  for (int d = 0; d < r - 2; ++d) faces *= shape[d];
  for (int64_t f = 0; f < std::min<int64_t>(faces, kMaxFaces); ++f) {
    int64_t rest = f;
    os << "  [";
    for (int d = r - 3; d >= 0; --d) {
      base[d] = rest % shape[d];
      rest /= shape[d];
    }
    for (int d = 0; d < r - 2; ++d) os << (d ? ", " : "") << base[d] + 1;
    os << ", :, :]\n";
    face(os, shape, shards, base, r - 2, r - 1, colour);
  }
  if (faces > kMaxFaces) os << "  ... " << faces - kMaxFaces << " more faces\n";
  return os.str();
}

}  // namespace tapestry
