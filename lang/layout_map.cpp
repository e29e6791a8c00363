// The shard map drawn by :layout: a character grid sized to the terminal, one colour and symbol
// per rank while symbols last (62: 0-9, a-z, A-Z), and for bigger meshes a summary per tensor
// dim (parts and their sizes) with the rank order, and a picture of the blocks' boundaries.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "engine/ir/error.hpp"
#include "lang/plan_lua.hpp"

namespace tapestry {

namespace {

constexpr int kRows = 16, kMaxRows = 64, kMaxFaces = 4, kMaxListed = 16;
constexpr int kSymbols = 62;

const char* symbol_of(int i) {
  static const char kAll[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  return kAll + i % kSymbols;
}

// The shard holding element (coords) of the tensor, or -1.
int owner(const std::vector<plan::Shard>& shards, const std::vector<int64_t>& c) {
  for (size_t k = 0; k < shards.size(); ++k) {
    const plan::Shard& s = shards[k];
    bool in = true;
    for (size_t d = 0; d < c.size() && in; ++d) in = c[d] >= s.box.lo[d] && c[d] <= s.box.hi[d];
    if (in) return static_cast<int>(k);
  }
  return -1;
}

struct Map {
  const Shape& shape;
  const std::vector<plan::Shard>& shards;
  bool symbols;  // one symbol per rank; else blocks drawn as a checkerboard of their indices
  bool colour;
  int cols;
  std::vector<std::vector<int64_t>> starts;  // per dim, the sorted distinct block starts

  // A block's index along dim d.
  int64_t index(int k, size_t d) const {
    const auto& st = starts[d];
    return std::lower_bound(st.begin(), st.end(), shards[k].box.lo[d]) - st.begin();
  }

  std::string cell(int k) const {
    if (k < 0) return "?";
    const int rank = shards[k].rank;
    std::string c;
    if (symbols) {
      c = std::string(1, *symbol_of(rank));
    } else {
      int64_t parity = 0;
      for (size_t d = 0; d < shape.size(); ++d) parity += index(k, d);
      c = parity % 2 ? "#" : ".";
    }
    if (!colour) return c;
    static const int kColours[] = {41, 42, 43, 44, 45, 46, 101, 102, 103, 104, 105, 106};
    return cat_str("\x1b[30;", kColours[rank % 12], "m", c, "\x1b[0m");
  }

  // One 2-D face: rows over dim `rd`, cols over dim `cd`, other coords fixed in `base`.
  void face(std::ostringstream& os, std::vector<int64_t> base, int rd, int cd) const {
    const int64_t rows = rd < 0 ? 1 : shape[rd], ncols = shape[cd];
    // Enough rows for every part along the rows, within reason; the columns fit the terminal.
    const int64_t row_parts = rd < 0 ? 1 : static_cast<int64_t>(starts[rd].size());
    const int nr = static_cast<int>(
        std::min<int64_t>(rows, std::min<int64_t>(kMaxRows, std::max<int64_t>(kRows, row_parts))));
    const int nc = static_cast<int>(std::min<int64_t>(ncols, cols));
    if (row_parts > nr || static_cast<int64_t>(starts[cd].size()) > nc)
      os << "  (" << row_parts << " x " << starts[cd].size() << " parts do not fit in " << nr << " x " << nc
         << " characters: the picture samples them)\n";
    for (int i = 0; i < nr; ++i) {
      os << "  ";
      for (int j = 0; j < nc; ++j) {
        if (rd >= 0) base[rd] = i * rows / nr;
        base[cd] = j * ncols / nc;
        os << cell(owner(shards, base));
      }
      os << "\n";
    }
  }
};

std::string range(int64_t lo, int64_t hi) { return cat_str(lo + 1, "..", hi + 1); }

std::string boxes(const plan::Shard& s, size_t r) {
  std::string out;
  for (size_t d = 0; d < r; ++d) out += (d ? " x " : "") + range(s.box.lo[d], s.box.hi[d]);
  return out;
}

// "dim 1: 256 parts of 16 (1..16, 17..32, ..., 4081..4096)" / "dim 2: whole".
std::string dim_summary(const Shape& shape, const std::vector<int64_t>& starts, size_t d) {
  if (starts.size() <= 1) return cat_str("dim ", d + 1, ": whole (", shape[d], ")");
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < starts.size(); ++i)
    sizes.push_back((i + 1 < starts.size() ? starts[i + 1] : shape[d]) - starts[i]);
  const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
  std::string s = cat_str("dim ", d + 1, ": ", starts.size(), " parts of ",
                          *lo == *hi ? std::to_string(*lo) : cat_str(*lo, " to ", *hi), " (");
  auto part = [&](size_t i) { return range(starts[i], starts[i] + sizes[i] - 1); };
  if (starts.size() <= 4) {
    for (size_t i = 0; i < starts.size(); ++i) s += (i ? ", " : "") + part(i);
  } else {
    s += part(0) + ", " + part(1) + ", ..., " + part(starts.size() - 1);
  }
  return s + ")";
}

// How ranks follow the blocks: row-major over the grid, one copy per rank, or irregular.
std::string rank_order(const Map& m, size_t r, int nranks) {
  std::set<std::vector<int64_t>> boxes_seen;
  for (const plan::Shard& s : m.shards) boxes_seen.insert(s.box.lo);
  if (boxes_seen.size() == 1) return cat_str("the whole tensor on each of ", nranks, " ranks");
  int64_t stride = 1;
  std::vector<int64_t> strides(r, 0);
  for (size_t d = r; d-- > 0;) {
    strides[d] = stride;
    stride *= static_cast<int64_t>(m.starts[d].size());
  }
  int64_t offset = -1;
  for (size_t k = 0; k < m.shards.size(); ++k) {
    int64_t linear = 0;
    for (size_t d = 0; d < r; ++d) linear += m.index(static_cast<int>(k), d) * strides[d];
    const int64_t off = m.shards[k].rank - linear;
    if (offset == -1) offset = off;
    if (off != offset) return "ranks in no regular order (tp.plan lists them)";
  }
  return offset == 0 ? "block i (row-major over the parts) on rank i"
                     : cat_str("block i on rank i + ", offset);
}

}  // namespace

std::string render_layout(const Shape& shape, const std::vector<plan::Shard>& shards,
                          const std::string& summary, bool colour, int width) {
  std::ostringstream os;
  os << shape_str(shape) << ": " << summary << "\n";
  std::set<int> ranks;
  for (const plan::Shard& s : shards) ranks.insert(s.rank);
  const int nranks = static_cast<int>(ranks.size());
  const size_t r = shape.size();
  Map m{shape, shards, ranks.empty() || *ranks.rbegin() < kSymbols, colour, std::max(8, width - 4), {}};
  m.starts.resize(r);
  for (size_t d = 0; d < r; ++d) {
    std::set<int64_t> st;
    for (const plan::Shard& s : shards) st.insert(s.box.lo[d]);
    m.starts[d].assign(st.begin(), st.end());
  }
  // The legend: every shard when few, else the first and last few and a summary per dim.
  if (shards.size() > static_cast<size_t>(kMaxListed)) {
    os << "  " << shards.size() << " blocks on " << nranks << " ranks; " << rank_order(m, r, nranks) << "\n";
    for (size_t d = 0; d < r; ++d) os << "  " << dim_summary(shape, m.starts[d], d) << "\n";
  }
  for (size_t k = 0; k < shards.size(); ++k) {
    if (shards.size() > static_cast<size_t>(kMaxListed) && k == 6) {
      os << "  ... " << shards.size() - 8 << " more\n";
      k = shards.size() - 2;
    }
    os << "  " << (m.symbols ? m.cell(static_cast<int>(k)) + " " : "") << "rank " << shards[k].rank << ": "
       << boxes(shards[k], r) << "\n";
  }
  if (!m.symbols) os << "  (" << nranks << " ranks: the picture shows the blocks as a checkerboard)\n";
  if (r == 0) return os.str();
  std::vector<int64_t> base(r, 0);
  if (r <= 2) {
    m.face(os, base, r == 2 ? 0 : -1, static_cast<int>(r) - 1);
    return os.str();
  }
  // n-D: faces over the last two dims, for the first indices of the leading dims.
  int64_t faces = 1;
  for (size_t d = 0; d + 2 < r; ++d) faces *= shape[d];
  for (int64_t f = 0; f < std::min<int64_t>(faces, kMaxFaces); ++f) {
    int64_t rest = f;
    os << "  [";
    for (size_t d = r - 2; d-- > 0;) {
      base[d] = rest % shape[d];
      rest /= shape[d];
    }
    for (size_t d = 0; d + 2 < r; ++d) os << (d ? ", " : "") << base[d] + 1;
    os << ", :, :]\n";
    m.face(os, base, static_cast<int>(r) - 2, static_cast<int>(r) - 1);
  }
  if (faces > kMaxFaces) os << "  ... " << faces - kMaxFaces << " more faces\n";
  return os.str();
}

}  // namespace tapestry
