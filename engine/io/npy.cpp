// NumPy .npy reading and writing by boxes (npy.hpp).
#include "engine/io/npy.hpp"

#include "engine/io/byte_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <utility>

#include "engine/io/atomic_file.hpp"
#include "engine/io/write_file.hpp"
#include "engine/ir/error.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry::io {

// The data is read and written as raw bytes: that is only right on a little-endian host.
static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr int64_t kAlign = 64;
// numpy refuses headers over 10000 bytes by default; v2/v3 allow 4 GiB, which a hostile file
// could use to make us allocate. A real header with <= 64 dims is a few hundred bytes.
constexpr uint32_t kMaxHeaderLen = 1 << 20;
constexpr int kMaxRank = kMaxDims;  // numpy's NPY_MAXDIMS (engine/ir/shape.hpp)

template <class... Args> [[noreturn]] void fail(const std::string& path, const Args&... args) {
  throw Error(cat_str("'", path, "': ", args...));
}

using File = WriteFile;  // reads go through byte_source.hpp: a file or a URL

// ---- descr ----

// bf16 has no numpy dtype: it is written as '<V2', the raw 2 bytes, which is what numpy writes for
// ml_dtypes.bfloat16 (read it back there with a.view(ml_dtypes.bfloat16)), and a 2-byte void
// array is read as bf16 (docs/dtypes.md).
std::string_view descr_of(DType t) {
  switch (t) {
    case DType::Bool: return "|b1";
    case DType::I8: return "|i1";
    case DType::U8: return "|u1";
    case DType::I32: return "<i4";
    case DType::I64: return "<i8";
    case DType::F16: return "<f2";
    case DType::BF16: return "<V2";
    case DType::F32: return "<f4";
    case DType::C64: return "<c8";
    case DType::C128: return "<c16";
    case DType::F64: break;
  }
  return "<f8";
}

DType dtype_of_descr(const std::string& path, const std::string& d) {
  constexpr const char* kSupported =
      "(Tapestry reads '|b1' bool, '|i1' i8, '|u1' u8, '<i4' i32, '<i8' i64, '<f2' f16, '<V2' bf16, '<f4' "
      "f32, '<f8' f64, '<c8' c64, '<c16' c128)";
  if (d.size() == 3) {  // one byte: any order mark
    const std::string k = d.substr(1);
    if (k == "b1") return DType::Bool;
    if (k == "i1") return DType::I8;
    if (k == "u1") return DType::U8;
    if (k == "V2" && d[0] != '>') return DType::BF16;
  }
  if ((d.size() == 3 || d.size() == 4) && d[0] == '>')
    fail(path, "big-endian data ('", d,
         "') is not supported; convert it with "
         "a.astype(a.dtype.newbyteorder('<'))");
  if ((d.size() == 3 || d.size() == 4) && (d[0] == '<' || d[0] == '=')) {
    const std::string k = d.substr(1);
    if (k == "f4") return DType::F32;
    if (k == "f8") return DType::F64;
    if (k == "i4") return DType::I32;
    if (k == "i8") return DType::I64;
    if (k == "f2") return DType::F16;
    if (k == "c8") return DType::C64;
    if (k == "c16") return DType::C128;
  }
  if (!d.empty() && d.find('O') != std::string::npos)
    fail(path, "object arrays ('", d, "') cannot be read ", kSupported);
  fail(path, "unsupported dtype '", d, "' ", kSupported);
}

// ---- the header dict: a Python literal, parsed strictly ----

class DictParser {
 public:
  DictParser(const std::string& path, const std::string& s) : path_(path), s_(s) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    skip_ws();
    expect('{');
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      const std::string key = string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        dup(seen_descr, key);
        if (peek() == '[') bad("structured dtypes (a list 'descr') are not supported");
        h.dtype = dtype_of_descr(path_, string());
      } else if (key == "fortran_order") {
        dup(seen_order, key);
        h.fortran_order = boolean();
      } else if (key == "shape") {
        dup(seen_shape, key);
        h.shape = shape();
      } else {
        bad("unexpected key '", key, "'");
      }
      skip_ws();
      if (eat(',')) continue;
      expect('}');
      break;
    }
    skip_ws();
    if (i_ != s_.size()) bad("unexpected text after the dict");
    if (!seen_descr || !seen_order || !seen_shape)
      bad("the dict needs the keys 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  template <class... Args> [[noreturn]] void bad(const Args&... args) {
    // The dict ends in padding; show it trimmed, and not all of a hostile one.
    std::string shown = s_.substr(0, std::min<size_t>(s_.find_last_not_of(" \n") + 1, 200));
    fail(path_, "malformed .npy header: ", args..., " (at byte ", i_, " of ", shown, ")");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) bad("expected '", c, "'");
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void dup(bool& seen, const std::string& key) {
    if (seen) bad("key '", key, "' given twice");
    seen = true;
  }
  // A quoted string without escapes (no valid header needs one).
  std::string string() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    const size_t end = s_.find(q, ++i_);
    if (end == std::string::npos) bad("unterminated string");
    std::string out = s_.substr(i_, end - i_);
    if (out.find('\\') != std::string::npos) bad("escapes in strings are not supported");
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) return i_ += 4, true;
    if (s_.compare(i_, 5, "False") == 0) return i_ += 5, false;
    bad("expected True or False");
  }
  Shape shape() {
    Shape out;
    expect('(');
    for (;;) {
      skip_ws();
      if (eat(')')) break;
      out.push_back(integer());
      if (static_cast<int>(out.size()) > kMaxRank) bad("more than ", kMaxRank, " dimensions");
      skip_ws();
      if (eat(',')) continue;
      expect(')');
      break;
    }
    return out;
  }
  int64_t integer() {
    const bool neg = eat('-');
    if (peek() < '0' || peek() > '9') bad("expected a size");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[i_] - '0', &v))
        bad("a size overflows 64 bits");
      ++i_;
    }
    eat('L');  // Python 2 longs
    return neg ? -v : v;
  }

  const std::string& path_;
  const std::string& s_;
  size_t i_ = 0;
};

std::string shape_literal(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// ---- boxes as runs of the file ----

// Calls fn(file element offset, box element offset, elements) for each maximal contiguous run
// of `box` in a row-major array of `shape`, in row-major order of the box.
void for_each_run(const Shape& shape, const poly::Box& box,
                  const std::function<void(int64_t, int64_t, int64_t)>& fn) {
  const int r = static_cast<int>(shape.size());
  if (r == 0) return fn(0, 0, 1);
  if (box.empty()) return;
  const Strides st = contiguous_strides(shape);
  // Trailing dims the box covers whole merge into the run, and so does the first partial one.
  int k = r - 1;
  while (k > 0 && box.lo[k] == 0 && box.hi[k] == shape[k] - 1) --k;
  const int64_t run = box.extent(k) * st[k];
  std::vector<int64_t> idx(box.lo.begin(), box.lo.begin() + k);
  int64_t done = 0;
  for (;;) {
    int64_t off = box.lo[k] * st[k];
    for (int d = 0; d < k; ++d) off += idx[d] * st[d];
    fn(off, done, run);
    done += run;
    int d = k - 1;
    for (; d >= 0; --d) {
      if (++idx[d] <= box.hi[d]) break;
      idx[d] = box.lo[d];
    }
    if (d < 0) return;
  }
}

// Copies between two views of one shape and dtype, any strides.
void copy_view(const View& src, const View& dst) {
  const int64_t n = src.numel();
  if (n == 0) return;
  const int esz = dtype_size(src.dtype), r = src.rank();
  const char* sp = src.byte_ptr();
  char* dp = dst.byte_ptr();
  std::vector<int64_t> idx(r, 0);
  int64_t so = 0, dof = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dp + dof * esz, sp + so * esz, esz);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[d] < src.shape[d]) {
        so += src.strides[d];
        dof += dst.strides[d];
        break;
      }
      so -= (src.shape[d] - 1) * src.strides[d];
      dof -= (dst.shape[d] - 1) * dst.strides[d];
      idx[d] = 0;
    }
  }
}

void check_box_args(const NpyHeader& h, const poly::Box& box, const View& v) {
  internal_check(box.rank() == static_cast<int>(h.shape.size()));
  internal_check(poly::Box::of_shape(h.shape).contains(box));
  internal_check(v.shape == box.extents() && v.dtype == h.dtype);
}

std::vector<int> reversed_dims(int r) {
  std::vector<int> p(r);
  for (int i = 0; i < r; ++i) p[i] = r - 1 - i;
  return p;
}

}  // namespace

int64_t NpyHeader::data_bytes() const { return numel(shape) * dtype_size(dtype); }

std::string npy_header_bytes(DType dtype, const Shape& shape) {
  const std::string dict = cat_str("{'descr': '", descr_of(dtype),
                                   "', 'fortran_order': False, 'shape': ", shape_literal(shape), ", }");
  // Version 1.0 has a 2-byte length; 2.0 (4 bytes) only when the dict would not fit.
  const bool v2 = dict.size() + 1 + 10 + kAlign > 0xffff;
  const int64_t prefix = v2 ? 12 : 10;
  const int64_t unpadded = prefix + static_cast<int64_t>(dict.size()) + 1;  // + '\n'
  const int64_t total = (unpadded + kAlign - 1) / kAlign * kAlign;
  const uint32_t len = static_cast<uint32_t>(total - prefix);
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += dict;
  out.append(static_cast<size_t>(total - unpadded), ' ');
  out += '\n';
  return out;
}

NpyHeader make_npy_header(DType dtype, const Shape& shape) {
  for (int64_t s : shape) internal_check(s >= 0);
  NpyHeader h;
  h.dtype = dtype;
  h.shape = shape;
  h.data_offset = static_cast<int64_t>(npy_header_bytes(dtype, shape).size());
  return h;
}

NpyHeader read_npy_header(const std::string& path) {
  const std::unique_ptr<ByteSource> src = open_bytes(path);  // a file or a URL
  const ByteSource& f = *src;
  const int64_t size = f.size();
  char pre[12];
  if (size < 10) fail(path, "not a .npy file (too short: ", size, " bytes)");
  f.read_at(pre, 10, 0);
  if (std::memcmp(pre, kMagic, kMagicLen) != 0) fail(path, "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(pre[6]), minor = static_cast<unsigned char>(pre[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(path, "unsupported .npy version ", major, ".", minor, " (reads 1.0, 2.0 and 3.0)");
  auto byte = [&](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(pre[i])); };
  uint32_t len = byte(8) | byte(9) << 8;
  int64_t prefix = 10;
  if (major >= 2) {
    if (size < 12) fail(path, "truncated .npy header");
    f.read_at(pre + 10, 2, 10);
    len |= byte(10) << 16 | byte(11) << 24;
    prefix = 12;
  }
  if (len > kMaxHeaderLen) fail(path, "implausible .npy header length ", len, " bytes");
  if (prefix + len > size)
    fail(path, "truncated .npy header: it claims ", len, " bytes, the file has ", size - prefix);
  std::string dict(len, '\0');
  f.read_at(dict.data(), len, prefix);
  for (unsigned char c : dict)
    if (c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t' && c != '\r'))
      fail(path, "malformed .npy header: it is not printable ASCII");

  NpyHeader h = DictParser(path, dict).parse();
  h.data_offset = prefix + len;
  int64_t n = 1;
  for (int64_t s : h.shape) {
    if (s < 0) fail(path, "shape ", shape_str(h.shape), " has a negative size ", s);
    if (__builtin_mul_overflow(n, s, &n)) fail(path, "shape ", shape_str(h.shape), " overflows");
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(h.dtype)), &bytes))
    fail(path, "shape ", shape_str(h.shape), " overflows");
  if (bytes > size - h.data_offset)
    fail(path, "truncated: shape ", shape_str(h.shape), " ", dtype_name(h.dtype), " needs ", bytes,
         " data bytes, the file has ", size - h.data_offset);
  return h;
}

void read_npy_box(const std::string& path, const NpyHeader& h, const poly::Box& box, const View& out) {
  check_box_args(h, box, out);
  if (h.fortran_order) {
    // Column-major data of shape S is row-major data of shape reverse(S).
    NpyHeader c = h;
    c.fortran_order = false;
    std::reverse(c.shape.begin(), c.shape.end());
    poly::Box rb = box;
    std::reverse(rb.lo.begin(), rb.lo.end());
    std::reverse(rb.hi.begin(), rb.hi.end());
    return read_npy_box(path, c, rb, out.permuted(reversed_dims(out.rank())));
  }
  if (box.rank() > 0 && box.empty()) return;
  const std::unique_ptr<ByteSource> src = open_bytes(path);  // a file or a URL
  const int esz = dtype_size(h.dtype);
  // Straight into `out` when it is dense; else through a staging buffer.
  std::shared_ptr<Value> stage;
  View dst = out;
  if (!out.is_contiguous()) {
    stage = Value::alloc(h.dtype, out.shape);
    dst = stage->view();
  }
  char* base = dst.byte_ptr();
  std::vector<ByteRun> runs;
  for_each_run(h.shape, box, [&](int64_t file_el, int64_t box_el, int64_t n) {
    runs.push_back({h.data_offset + file_el * esz, n * esz, base + box_el * esz});
  });
  src->read_runs(std::move(runs));
  stats().bytes_read += static_cast<uint64_t>(dst.numel() * esz);
  if (h.dtype == DType::Bool) {  // numpy bools are any nonzero byte; ours must be 0 or 1
    const int64_t n = dst.numel();
    for (int64_t i = 0; i < n; ++i) base[i] = base[i] != 0;
  }
  if (stage) copy_view(dst, out);
}

NpyHeader write_npy_header(const std::string& path, DType dtype, const Shape& shape, bool fresh) {
  NpyHeader h = make_npy_header(dtype, shape);
  const std::string bytes = npy_header_bytes(dtype, shape);
  const File f(path, O_WRONLY | O_CREAT | (fresh ? O_EXCL | O_NOFOLLOW : O_TRUNC), "for writing");
  f.write_at(bytes.data(), bytes.size(), 0, false);
  f.resize(h.data_offset + h.data_bytes());
  return h;
}

void write_npy_box(const std::string& path, const NpyHeader& h, const poly::Box& box, const View& in) {
  check_box_args(h, box, in);
  internal_check(!h.fortran_order);
  if (box.rank() > 0 && box.empty()) return;
  const File f(path, O_WRONLY, "for writing");
  const int esz = dtype_size(h.dtype);
  std::shared_ptr<Value> stage;
  View src = in;
  if (!in.is_contiguous()) {
    stage = Value::alloc(h.dtype, in.shape);
    copy_view(in, stage->view());
    src = stage->view();
  }
  const char* base = src.byte_ptr();
  for_each_run(h.shape, box, [&](int64_t file_el, int64_t box_el, int64_t n) {
    f.write_at(base + box_el * esz, static_cast<size_t>(n * esz), h.data_offset + file_el * esz);
  });
  stats().bytes_written += static_cast<uint64_t>(src.numel() * esz);
}

std::shared_ptr<Value> load_npy(const std::string& path) {
  const NpyHeader h = read_npy_header(path);
  auto v = Value::alloc(h.dtype, h.shape);
  read_npy_box(path, h, poly::Box::of_shape(h.shape), v->view());
  return v;
}

void check_replaceable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    fail(path, "cannot write: ", std::strerror(errno));
  }
  if (S_ISREG(st.st_mode)) return;
  const char* kind = S_ISLNK(st.st_mode)                          ? "a symbolic link"
                     : S_ISDIR(st.st_mode)                        ? "a folder"
                     : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                     : S_ISSOCK(st.st_mode)                       ? "a socket"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                  : "not a regular file";
  fail(path, "exists and is ", kind, "; only a regular file is replaced");
}

void save_npy(const std::string& path, const View& v) {
  write_atomically(path, [&](const std::string& tmp) {
    const NpyHeader h = write_npy_header(tmp, v.dtype, v.shape, true);
    write_npy_box(tmp, h, poly::Box::of_shape(v.shape), v);
  });
}

}  // namespace tapestry::io
