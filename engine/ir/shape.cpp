#include "engine/ir/shape.hpp"

#include "engine/ir/error.hpp"

namespace tapestry {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "}";
}

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)  // not user_check: its message would be built every time
      user_error("shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast (", da, " vs ", db,
                 " at dimension ", i + 1, " of the result)");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool broadcastable_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

int normalize_dim(int64_t d, int rank) {
  const int64_t r = rank;
  const int64_t given = d;
  if (d < 0) d += r + 1;
  user_check(given != 0 && d >= 1 && d <= r, "dimension ", given, " out of range for a ", rank,
             "-D tensor (valid: 1..", r, " or -", r, "..-1)");
  return static_cast<int>(d - 1);
}

}  // namespace tapestry
