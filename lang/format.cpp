// numpy's array2string, transcribed: FloatingFormat chooses one format for all the
// shown elements of a tensor, _formatArray lays them out with brackets, line
// wrapping and "..." summaries. Booleans print Lua-style (true/false).
#include "lang/format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "engine/ir/error.hpp"

namespace tapestry {

namespace {

// --- float digits ------------------------------------------------------------------

// The shortest decimal digits that round-trip for T: value = 0.D * 10^(exp+1),
// i.e. D[0] is the digit of 10^exp.
struct Digits {
  bool neg = false;
  std::string d;
  int exp = 0;
};

template <class T> Digits shortest_digits(T x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  Digits out;
  size_t i = 0;
  if (s[0] == '-') out.neg = true, i = 1;
  const size_t e = s.find('e');
  for (; i < e; ++i)
    if (s[i] != '.') out.d += s[i];
  out.exp = std::stoi(s.substr(e + 1));
  return out;
}

// Drops trailing zeros after the point, keeping the point: "2.500" -> "2.5", "2.000" -> "2.".
std::string trim_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  return s;
}

// dragon4_positional(unique, precision, trim='.'): shortest digits, at most
// `precision` after the point (then correctly rounded from the exact value).
template <class T> std::string positional(T x, int precision) {
  const Digits g = shortest_digits(x);
  const int len = static_cast<int>(g.d.size());
  if (len - 1 - g.exp > precision) {
    char buf[400];
    auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, precision);
    return trim_zeros(std::string(buf, r.ptr));
  }
  std::string ip, fp;
  if (g.exp >= 0) {
    for (int i = 0; i <= g.exp; ++i) ip += i < len ? g.d[i] : '0';
    if (len > g.exp + 1) fp = g.d.substr(g.exp + 1);
  } else {
    ip = "0";
    fp = std::string(-g.exp - 1, '0') + g.d;
  }
  std::string s = (g.neg ? "-" : "") + ip + "." + fp;
  return trim_zeros(s);
}

// dragon4_scientific(unique, precision, trim='.'): mantissa and exponent apart.
template <class T> std::pair<std::string, int> scientific(T x, int precision) {
  Digits g = shortest_digits(x);
  if (static_cast<int>(g.d.size()) - 1 > precision) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific, precision);
    std::string s(buf, r.ptr);
    const size_t e = s.find('e');
    return {trim_zeros(s.substr(0, e)), std::stoi(s.substr(e + 1))};
  }
  std::string m = (g.neg ? "-" : "") + g.d.substr(0, 1) + "." + g.d.substr(1);
  return {trim_zeros(m), g.exp};
}

std::string pad_left(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

// --- element formats ------------------------------------------------------------------

// numpy's FloatingFormat (floatmode 'maxprec', sign '-', no suppression).
template <class T> class FloatFormat {
 public:
  FloatFormat(const std::vector<T>& data, int precision) : precision_(precision) {
    std::vector<T> finite;
    bool neginf = false;
    for (T x : data) {
      if (std::isfinite(x)) finite.push_back(x);
      else if (std::isinf(x) && x < 0) neginf = true;
    }
    T lo = 0, hi = 0;
    bool any_nonzero = false;
    for (T x : finite) {
      const T a = std::abs(x);
      if (a == 0) continue;
      lo = any_nonzero ? std::min(lo, a) : a;
      hi = any_nonzero ? std::max(hi, a) : a;
      any_nonzero = true;
    }
    if (any_nonzero)
      exp_ = hi >= static_cast<T>(1e8) || lo < static_cast<T>(1e-4) || hi / lo > static_cast<T>(1000);
    if (finite.empty()) {
      // no digits to align: only nan/inf below
    } else if (exp_) {
      for (T x : finite) {
        auto [m, e] = scientific(x, precision_);
        const size_t dot = m.find('.');
        left_ = std::max(left_, static_cast<int>(dot));
        frac_ = std::max(frac_, static_cast<int>(m.size() - dot - 1));
        exp_digits_ = std::max(exp_digits_, static_cast<int>(std::to_string(std::abs(e)).size()));
      }
      right_ = exp_digits_ + 2 + frac_;
    } else {
      for (T x : finite) {
        const std::string s = positional(x, precision_);
        const size_t dot = s.find('.');
        left_ = std::max(left_, static_cast<int>(dot));
        right_ = std::max(right_, static_cast<int>(s.size() - dot - 1));
      }
    }
    if (finite.size() != data.size())
      left_ = std::max({left_, 3 - (right_ + 1), 3 + (neginf ? 1 : 0) - (right_ + 1)});
  }

  std::string operator()(T x) const {
    const size_t width = static_cast<size_t>(left_ + right_ + 1);
    if (std::isnan(x)) return pad_left("nan", width);
    if (std::isinf(x)) return pad_left(x < 0 ? "-inf" : "inf", width);
    if (exp_) {
      auto [m, e] = scientific(x, precision_);
      if (static_cast<int>(m.size() - m.find('.') - 1) < frac_) {
        // numpy pads with further digits of the stored value (dragon4's min_digits), not
        // zeros: f32 0.6 is 6.0000002e-01 next to a value that needs 8 digits.
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific, frac_);
        const std::string t(buf, r.ptr);
        m = t.substr(0, t.find('e'));
        e = std::stoi(t.substr(t.find('e') + 1));
      }
      std::string ex = std::to_string(std::abs(e));
      ex = std::string(exp_digits_ - ex.size(), '0') + ex;
      return pad_left(m, left_ + 1 + frac_) + (e < 0 ? "e-" : "e+") + ex;
    }
    const std::string s = positional(x, precision_);
    const size_t frac = s.size() - s.find('.') - 1;
    return pad_left(s, left_ + 1 + frac) + std::string(right_ - frac, ' ');
  }

 private:
  int precision_;
  bool exp_ = false;
  int left_ = 0, right_ = 0;       // widths before / after the point (incl. exponent)
  int frac_ = 0, exp_digits_ = 2;  // scientific: mantissa digits, exponent digits
};

template <class T> std::string plain_text(T x) {
  if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
  else return std::to_string(x);
}

// --- layout -------------------------------------------------------------------------

struct Layout {
  const View& v;
  const Shape& shape;  // the tensor's; v holds only the corners of summarized dims
  bool summarize;
  int64_t edge;
  std::function<std::string(int64_t)> word;  // element text, given its offset in elements

  bool summarized(int axis) const { return summarize && 2 * edge < shape[axis]; }
  // Where index i of the tensor's dim `axis` is in v.
  int64_t at(int axis, int64_t i) const {
    return (i < edge ? i : i - (shape[axis] - v.shape[axis])) * v.strides[axis];
  }

  // numpy's _extendLine: wrap before `w` unless the line holds only the indent.
  static void extend(std::string& s, std::string& line, const std::string& w, int width,
                     const std::string& indent) {
    if (line.size() + w.size() > static_cast<size_t>(width) && line.size() > indent.size()) {
      while (!line.empty() && line.back() == ' ') line.pop_back();
      s += line + "\n";
      line = indent;
    }
    line += w;
  }

  // numpy's _formatArray recurser; `off` is the element offset of the index so far.
  std::string rec(int axis, int64_t off, const std::string& indent, int width) const {
    if (axis == v.rank()) return word(off);
    const std::string next_indent = indent + " ";
    const int next_width = width - 1;
    const int64_t n = shape[axis];
    const bool summary = summarized(axis);
    const int64_t lead = summary ? edge : 0, trail = summary ? edge : n;
    const int axes_left = v.rank() - axis;
    std::string s;
    if (axes_left == 1) {
      const int elem_width = width - 1;
      std::string line = indent;
      for (int64_t i = 0; i < lead; ++i) {
        extend(s, line, rec(axis + 1, off + at(axis, i), next_indent, next_width), elem_width, indent);
        line += " ";
      }
      if (summary) {
        extend(s, line, "...", elem_width, indent);
        line += " ";
      }
      for (int64_t i = trail; i > 1; --i) {
        extend(s, line, rec(axis + 1, off + at(axis, n - i), next_indent, next_width), elem_width, indent);
        line += " ";
      }
      extend(s, line, rec(axis + 1, off + at(axis, n - 1), next_indent, next_width), elem_width, indent);
      s += line;
    } else {
      const std::string sep(axes_left - 1, '\n');
      for (int64_t i = 0; i < lead; ++i)
        s += indent + rec(axis + 1, off + at(axis, i), next_indent, next_width) + sep;
      if (summary) s += indent + "..." + sep;
      for (int64_t i = trail; i > 1; --i)
        s += indent + rec(axis + 1, off + at(axis, n - i), next_indent, next_width) + sep;
      s += indent + rec(axis + 1, off + at(axis, n - 1), next_indent, next_width);
    }
    return "[" + s.substr(indent.size()) + "]";
  }

  // Visits the shown elements in order (for the width pass).
  void each(int axis, int64_t off, const std::function<void(int64_t)>& f) const {
    if (axis == v.rank()) return f(off);
    const int64_t n = shape[axis];
    for (int64_t i = 0; i < n; ++i) {
      if (summarized(axis) && i == edge) i = n - edge;
      each(axis + 1, off + at(axis, i), f);
    }
  }
};

template <class T> std::string format_body(const View& v, const Shape& shape, const FormatOptions& opts) {
  const T* p = v.ptr<T>();
  Layout lay{v, shape, summarizes(shape, opts), std::max(opts.edge_items, 1), {}};
  std::vector<T> shown;
  lay.each(0, 0, [&](int64_t off) { shown.push_back(p[off]); });
  if constexpr (std::is_floating_point_v<T>) {
    FloatFormat<T> ff(shown, opts.precision);
    lay.word = [p, ff](int64_t off) { return ff(p[off]); };
  } else {
    size_t width = 0;
    for (T x : shown) width = std::max(width, plain_text(x).size());
    lay.word = [p, width](int64_t off) { return pad_left(plain_text(p[off]), width); };
  }
  return lay.rec(0, 0, " ", opts.line_width);
}

// A 0-d tensor prints as numpy prints a scalar: shortest round-trip digits,
// positional in [1e-4, 1e16), "2.0" for whole numbers.
template <class T> std::string scalar_text(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    const T a = std::abs(x);
    if (a == 0 || (a >= static_cast<T>(1e-4) && a < static_cast<T>(1e16))) {
      std::string s = positional(x, 400);
      return s.back() == '.' ? s + "0" : s;
    }
    auto [m, e] = scientific(x, 400);
    if (m.back() == '.') m.pop_back();
    std::string ex = std::to_string(std::abs(e));
    return m + (e < 0 ? "e-" : "e+") + (ex.size() < 2 ? "0" : "") + ex;
  } else {
    return plain_text(x);
  }
}

}  // namespace

bool summarized_dim(int64_t size, const FormatOptions& opts) {
  return 2 * std::max(opts.edge_items, 1) < size;
}

bool summarizes(const Shape& shape, const FormatOptions& opts) {
  if (numel(shape) <= opts.threshold) return false;
  return std::any_of(shape.begin(), shape.end(), [&](int64_t n) { return summarized_dim(n, opts); });
}

std::string format_tensor(const View& v, const FormatOptions& opts, const Shape& given) {
  const Shape& shape = given.empty() ? v.shape : given;
  internal_check(shape.size() == v.shape.size());
  if (v.rank() == 0)
    return dispatch_dtype(v.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return scalar_text(*v.ptr<T>());
    });
  std::string body = "[]";
  if (v.numel() > 0)
    body = dispatch_dtype(v.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return format_body<T>(v, shape, opts);
    });
  if (!opts.footer) return body;
  return body + "\n[" + std::string(dtype_name(v.dtype)) + " tensor of shape " + shape_str(shape) +
         (opts.note.empty() ? "" : ", " + opts.note) + "]";
}

// Lua's tostring of a number: "%.14g" for floats (with ".0" when it looks like an
// integer), "%d" for integers.
std::string format_scalar(const View& v) {
  return dispatch_dtype(v.dtype, [&](auto tag) -> std::string {
    using T = typename decltype(tag)::type;
    const T x = *v.ptr<T>();
    if constexpr (std::is_floating_point_v<T>) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.14g", static_cast<double>(x));
      std::string s = buf;
      if (s.find_first_not_of("-0123456789") == std::string::npos) s += ".0";
      return s;
    } else {
      return plain_text(x);
    }
  });
}

}  // namespace tapestry
