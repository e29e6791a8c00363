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

// The precision whose shortest round-trip digits a value prints with (its storage type): an f16
// value prints "0.1", not the f32 digits of the same number, as numpy prints float16.
enum class Prec { F16, BF16, F32, F64 };
template <class T> constexpr Prec prec_of() {
  if constexpr (std::is_same_v<T, f16>) return Prec::F16;
  else if constexpr (std::is_same_v<T, bf16>) return Prec::BF16;
  else if constexpr (std::is_same_v<T, float>) return Prec::F32;
  else return Prec::F64;
}

// Whether the decimal text s reads back as exactly x in precision p (only f16 and bf16 ask).
bool round_trips(const std::string& s, double x, Prec p) {
  const double back = std::strtod(s.c_str(), nullptr);
  if (p == Prec::F16) return static_cast<double>(f16(back)) == x;
  return static_cast<double>(bf16(back)) == x;
}

// The type a stored float S is printed through: itself, or double for f16 and bf16 (exact).
template <class S>
using val_t = std::conditional_t<std::is_same_v<S, float> || std::is_same_v<S, double>, S, double>;

template <class S> Digits shortest_digits(val_t<S> x0) {
  using T = S;
  char buf[64];
  std::string s;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    auto r = std::to_chars(buf, buf + sizeof buf, x0, std::chars_format::scientific);
    s.assign(buf, r.ptr);
  } else {  // a 16-bit float: the fewest digits that read back as it (the closest of them)
    const double x = static_cast<double>(x0);
    for (int digits = 1; digits <= 17; ++digits) {  // 5 suffice for f16, 4 for bf16
      auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific, digits - 1);
      s.assign(buf, r.ptr);
      if (round_trips(s, x, prec_of<T>())) break;
    }
    // "1.500e+00" cut to its significant digits
    const size_t e = s.find('e');
    std::string m = s.substr(0, e);
    if (m.find('.') != std::string::npos) {
      while (m.back() == '0') m.pop_back();
      if (m.back() == '.') m.pop_back();
    }
    s = m + s.substr(e);
  }
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
template <class S> std::string positional(val_t<S> x, int precision) {
  const Digits g = shortest_digits<S>(x);
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
template <class S> std::pair<std::string, int> scientific(val_t<S> x, int precision) {
  Digits g = shortest_digits<S>(x);
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

// numpy's FloatingFormat (floatmode 'maxprec', sign '-' or '+', no suppression) for values
// stored as S (f16 and bf16 values held as double).
template <class S> class FloatFormat {
 public:
  using T = val_t<S>;
  FloatFormat(const std::vector<T>& data, int precision, bool plus = false)
      : precision_(precision), plus_(plus) {
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
    if (any_nonzero) {
      // numpy divides in the array's own type: an f16 ratio of 1000.24 rounds to 1000.
      T ratio = hi / lo;
      if constexpr (!std::is_same_v<S, T>) ratio = static_cast<double>(S(static_cast<float>(ratio)));
      exp_ = hi >= static_cast<T>(1e8) || lo < static_cast<T>(1e-4) || ratio > static_cast<T>(1000);
    }
    if (finite.empty()) {
      // no digits to align: only nan/inf below
    } else if (exp_) {
      for (T x : finite) {
        auto [m, e] = scientific<S>(x, precision_);
        m = signed_text(x, m);
        const size_t dot = m.find('.');
        left_ = std::max(left_, static_cast<int>(dot));
        frac_ = std::max(frac_, static_cast<int>(m.size() - dot - 1));
        exp_digits_ = std::max(exp_digits_, static_cast<int>(std::to_string(std::abs(e)).size()));
      }
      right_ = exp_digits_ + 2 + frac_;
    } else {
      for (T x : finite) {
        const std::string s = signed_text(x, positional<S>(x, precision_));
        const size_t dot = s.find('.');
        left_ = std::max(left_, static_cast<int>(dot));
        right_ = std::max(right_, static_cast<int>(s.size() - dot - 1));
      }
    }
    if (finite.size() != data.size())
      left_ = std::max({left_, 3 - (right_ + 1), 3 + ((neginf || plus_) ? 1 : 0) - (right_ + 1)});
  }

  std::string operator()(T x) const {
    const size_t width = static_cast<size_t>(left_ + right_ + 1);
    if (std::isnan(x)) return pad_left(plus_ ? "+nan" : "nan", width);
    if (std::isinf(x)) return pad_left(x < 0 ? "-inf" : (plus_ ? "+inf" : "inf"), width);
    if (exp_) {
      auto [m, e] = scientific<S>(x, precision_);
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
      return pad_left(signed_text(x, m), left_ + 1 + frac_) + (e < 0 ? "e-" : "e+") + ex;
    }
    const std::string s = signed_text(x, positional<S>(x, precision_));
    const size_t frac = s.size() - s.find('.') - 1;
    return pad_left(s, left_ + 1 + frac) + std::string(right_ - frac, ' ');
  }

 private:
  // sign '+': a '+' before a value without a minus (the imaginary parts of complex numbers).
  std::string signed_text(T x, const std::string& text) const {
    return plus_ && !std::signbit(x) ? "+" + text : text;
  }

  int precision_;
  bool plus_ = false;
  bool exp_ = false;
  int left_ = 0, right_ = 0;       // widths before / after the point (incl. exponent)
  int frac_ = 0, exp_digits_ = 2;  // scientific: mantissa digits, exponent digits
};

template <class T> std::string plain_text(T x) {
  if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
  else return std::to_string(+x);  // + : i8 and u8 print as numbers, not characters
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
  if constexpr (is_cx<T>) {
    // numpy's ComplexFloatingFormat: the real parts in one format, the imaginary parts in
    // another with a sign always, and the 'j' before the imaginary part's padding.
    using R = decltype(T{}.re);
    std::vector<R> re, im;
    for (const T& x : shown) re.push_back(x.re), im.push_back(x.im);
    const FloatFormat<R> fr(re, opts.precision), fi(im, opts.precision, /*plus=*/true);
    lay.word = [p, fr, fi](int64_t off) {
      const std::string i = fi(p[off].im);
      const size_t end = i.find_last_not_of(' ') + 1;
      return fr(p[off].re) + i.substr(0, end) + "j" + i.substr(end);
    };
  } else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
    std::vector<double> vals;
    for (const T& x : shown) vals.push_back(static_cast<double>(x));
    const FloatFormat<T> ff(vals, opts.precision);
    lay.word = [p, ff](int64_t off) { return ff(static_cast<double>(p[off])); };
  } else if constexpr (std::is_floating_point_v<T>) {
    FloatFormat<T> ff(shown, opts.precision);
    lay.word = [p, ff](int64_t off) { return ff(p[off]); };
  } else {
    size_t width = 0;
    for (T x : shown) width = std::max(width, plain_text(x).size());
    lay.word = [p, width](int64_t off) { return pad_left(plain_text(p[off]), width); };
  }
  return lay.rec(0, 0, " ", opts.line_width);
}

// numpy's scalar text of a float stored as S: shortest round-trip digits, positional in
// [1e-4, 1e16), "2.0" for whole numbers (whole: "2", as in a complex scalar's parts).
template <class S> std::string float_scalar_text(val_t<S> x, bool whole_point_zero = true) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  const auto a = std::abs(x);
  if (a == 0 || (a >= 1e-4 && a < 1e16)) {
    std::string s = positional<S>(x, 400);
    if (s.back() != '.') return s;
    return whole_point_zero ? s + "0" : s.substr(0, s.size() - 1);
  }
  auto [m, e] = scientific<S>(x, 400);
  if (m.back() == '.') m.pop_back();
  std::string ex = std::to_string(std::abs(e));
  return m + (e < 0 ? "e-" : "e+") + (ex.size() < 2 ? "0" : "") + ex;
}

// A 0-d tensor prints as numpy prints a scalar; a complex one as "(1+2j)", or "2j" when its
// real part is +0.
template <class T> std::string scalar_text(T x) {
  if constexpr (is_cx<T>) {
    using R = decltype(x.re);
    const std::string im = float_scalar_text<R>(x.im, false) + "j";
    if (x.re == 0 && !std::signbit(x.re)) return im;
    return "(" + float_scalar_text<R>(x.re, false) + (im[0] == '-' ? "" : "+") + im + ")";
  } else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
    return float_scalar_text<T>(static_cast<double>(x));
  } else if constexpr (std::is_floating_point_v<T>) {
    return float_scalar_text<T>(x);
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
    return dispatch_any_dtype(v.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return scalar_text(*v.ptr<T>());
    });
  std::string body = "[]";
  if (v.numel() > 0)
    body = dispatch_any_dtype(v.dtype, [&](auto tag) {
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
  return dispatch_any_dtype(v.dtype, [&](auto tag) -> std::string {
    using T = typename decltype(tag)::type;
    const T x = *v.ptr<T>();
    if constexpr (is_cx<T>) {
      return scalar_text(x);
    } else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.14g", static_cast<double>(x));
      std::string s = buf;
      if (s.find_first_not_of("-0123456789") == std::string::npos) s += ".0";
      return s;
    } else if constexpr (std::is_floating_point_v<T>) {
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
