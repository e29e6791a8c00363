#include "engine/ir/load_attrs.hpp"

#include <atomic>
#include <cstring>

#include "engine/ir/error.hpp"

namespace tapestry {

namespace {

// Strings travel in Attrs' integers (the plan wire and the interning see only numbers): the
// length, then the bytes 8 to an integer.
void put_string(std::vector<int64_t>& ints, const std::string& s) {
  ints.push_back(static_cast<int64_t>(s.size()));
  for (size_t i = 0; i < s.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, s.data() + i, std::min<size_t>(8, s.size() - i));
    ints.push_back(static_cast<int64_t>(word));
  }
}

std::string get_string(const std::vector<int64_t>& ints, size_t& at) {
  internal_check(at < ints.size() && ints[at] >= 0);
  const size_t n = static_cast<size_t>(ints[at++]);
  internal_check(ints.size() - at >= (n + 7) / 8);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    const auto word = static_cast<uint64_t>(ints[at++]);
    std::memcpy(s.data() + i, &word, std::min<size_t>(8, n - i));
  }
  return s;
}

std::atomic<LoadReader> g_reader{nullptr};

}  // namespace

Attrs LoadAttrs::encode() const {
  internal_check(origin.size() == file_shape.size());
  Attrs a;
  a.dtype = dtype;
  a.ints = {format,
            fortran_order ? 1 : 0,
            data_offset,
            mtime_ns,
            file_bytes,
            inode,
            static_cast<int64_t>(file_shape.size())};
  a.ints.insert(a.ints.end(), file_shape.begin(), file_shape.end());
  a.ints.insert(a.ints.end(), origin.begin(), origin.end());
  put_string(a.ints, path);
  put_string(a.ints, dataset);
  a.ints.push_back(static_cast<int64_t>(extra.size()));
  a.ints.insert(a.ints.end(), extra.begin(), extra.end());
  return a;
}

LoadAttrs LoadAttrs::decode(const Attrs& a) {
  constexpr size_t kFixed = 7;  // format, order, offset, mtime, bytes, inode, rank
  internal_check(a.ints.size() >= kFixed && a.ints[0] >= Raw && a.ints[0] <= Csv && a.ints[6] >= 0);
  LoadAttrs l;
  l.format = static_cast<Format>(a.ints[0]);
  l.fortran_order = a.ints[1] != 0;
  l.data_offset = a.ints[2];
  l.mtime_ns = a.ints[3];
  l.file_bytes = a.ints[4];
  l.inode = a.ints[5];
  l.dtype = a.dtype;
  const auto rank = static_cast<ptrdiff_t>(a.ints[6]);
  internal_check(a.ints.size() >= kFixed + 2 * static_cast<size_t>(rank));
  const auto dims = a.ints.begin() + kFixed;
  l.file_shape.assign(dims, dims + rank);
  l.origin.assign(dims + rank, dims + 2 * rank);
  size_t at = kFixed + 2 * static_cast<size_t>(rank);
  l.path = get_string(a.ints, at);
  l.dataset = get_string(a.ints, at);
  internal_check(at < a.ints.size() && a.ints[at] >= 0 &&
                 a.ints.size() - at - 1 == static_cast<size_t>(a.ints[at]));
  l.extra.assign(a.ints.begin() + static_cast<ptrdiff_t>(at) + 1, a.ints.end());
  return l;
}

void install_load_reader(LoadReader r) { g_reader.store(r); }

void read_load_box(const LoadAttrs& a, const std::vector<int64_t>& lo, const View& out) {
  const LoadReader r = g_reader.load();
  internal_check(r != nullptr);  // engine/io installs it at start-up
  r(a, lo, out);
}

}  // namespace tapestry
