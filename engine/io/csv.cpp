// Reading CSV and TSV (csv.hpp): an index in one pass, then boxes of rows parsed where read.
#include "engine/io/csv.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

#include "engine/io/byte_source.hpp"
#include "engine/io/csv_tokens.hpp"
#include "engine/ir/error.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry::io {

namespace {

constexpr size_t kMaxPlaces = 1024;          // an index notes 1024 to 2048 places
constexpr size_t kPiece = size_t(16) << 20;  // bytes read at a time by the index

template <class... Args> [[noreturn]] void fail(const std::string& path, const Args&... args) {
  throw Error(cat_str("'", path, "': ", args...));
}

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// A field as a double; nullopt when it is not a number (empty is NaN). from_chars reads the
// common forms fast; strtod then decides the rest ("+1", hex floats), as before.
std::optional<double> number(std::string_view raw) {
  const std::string_view s = trim(raw);
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  const std::string z(s);
  char* end = nullptr;
  errno = 0;
  v = std::strtod(z.c_str(), &end);
  if (end != z.c_str() + z.size()) return std::nullopt;
  return v;
}

// A kept column as errors name it: "'name' (3)" with a header, "3" without.
std::string column_label(const CsvIndex& ix, size_t k) {
  return ix.header ? cat_str("'", ix.names[k], "' (", ix.keep[k] + 1, ")") : std::to_string(ix.keep[k] + 1);
}

// Stores field `raw` (at `line`, kept column k) as element i of `out`.
void put(const std::string& path, const CsvIndex& ix, int64_t line, size_t k, const std::string& raw,
         const View& out, int64_t i) {
  const std::string_view s = trim(raw);
  auto bad = [&](const char* want) {
    fail(path, "line ", line, ", column ", column_label(ix, k), ": '", raw, "' is not ", want);
  };
  switch (out.dtype) {
    case DType::F32:
    case DType::F64: {
      const std::optional<double> v = number(s);
      if (!v) bad("a number");
      if (out.dtype == DType::F32) static_cast<float*>(out.buf->data())[i] = static_cast<float>(*v);
      else static_cast<double*>(out.buf->data())[i] = *v;
      return;
    }
    case DType::I32:
    case DType::I64: {
      int64_t v = 0;
      const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || p != s.data() + s.size()) bad("an integer");
      if (out.dtype == DType::I32) {
        if (v < INT32_MIN || v > INT32_MAX) bad("an i32");
        static_cast<int32_t*>(out.buf->data())[i] = static_cast<int32_t>(v);
      } else {
        static_cast<int64_t*>(out.buf->data())[i] = v;
      }
      return;
    }
    case DType::Bool: {
      const bool t = s == "1" || s == "true" || s == "True" || s == "TRUE";
      const bool f = s == "0" || s == "false" || s == "False" || s == "FALSE";
      if (!t && !f) bad("a bool (1, 0, true, false)");
      static_cast<bool*>(out.buf->data())[i] = t;
      return;
    }
    default: break;  // read_csv takes f32, f64, i32, i64 and bool (checked before reading)
  }
  throw InternalError("csv: unknown dtype");
}

// The index pass: records counted, the first two kept whole, every stride-th data row noted.
class IndexSink {
 public:
  IndexSink(const std::string& path, const CsvOptions& o) : path_(path), o_(o) {}

  void ch(char c) {
    if (collect_) field_ += c;
  }
  void field_end() {
    if (collect_) fields_.push_back(std::move(field_));
    field_.clear();
  }
  void record_end(const CsvRecord& r, bool blank) {
    if (blank) {
      fields_.clear();
      return;
    }
    if (records_ == 0) {
      first_ = fields_;
      first_line_ = r.line;
      header_ = o_.header.value_or(false);
      if (!o_.header)
        for (const std::string& f : first_) header_ = header_ || !number(f);
    } else if (r.fields != static_cast<int64_t>(first_.size())) {
      fail(path_, "line ", r.line, " has ", r.fields, " fields, line ", first_line_, " has ", first_.size());
    }
    if (records_ == (header_ ? 1 : 0)) {
      data_ = std::move(fields_);
      data_line_ = r.line;
    }
    const int64_t row = records_ - (header_ ? 1 : 0);
    if (row >= 0 && row % stride_ == 0) {
      if (offsets_.size() == 2 * kMaxPlaces) {  // every other place goes: twice the stride
        for (size_t i = 0; i < kMaxPlaces; ++i) {
          offsets_[i] = offsets_[2 * i];
          lines_[i] = lines_[2 * i];
        }
        offsets_.resize(kMaxPlaces);
        lines_.resize(kMaxPlaces);
        stride_ *= 2;
      }
      if (row % stride_ == 0) {
        offsets_.push_back(r.offset);
        lines_.push_back(r.line);
      }
    }
    ++records_;
    collect_ = records_ < 2;
    fields_.clear();
  }

  CsvIndex finish(int64_t file_bytes) {
    if (records_ == 0) fail(path_, "no rows");
    CsvIndex ix;
    ix.delimiter = o_.delimiter;
    ix.dtype = o_.dtype;
    ix.header = header_;
    ix.width = static_cast<int64_t>(first_.size());
    ix.rows = records_ - (header_ ? 1 : 0);
    if (ix.rows == 0) fail(path_, "a header and no data rows");
    std::vector<std::string> all;
    for (size_t j = 0; j < first_.size(); ++j)
      all.push_back(header_ ? std::string(trim(first_[j])) : std::to_string(j + 1));
    for (const auto& c : o_.columns) {
      if (const int64_t* i = std::get_if<int64_t>(&c)) {
        if (*i < 0 || *i >= ix.width)
          fail(path_, "column ", *i + 1, " is out of range: the file has ", ix.width, " columns");
        ix.keep.push_back(*i);
        continue;
      }
      const std::string& name = std::get<std::string>(c);
      if (!header_) fail(path_, "column '", name, "' asked for by name, but the file has no header row");
      const auto at = std::find(all.begin(), all.end(), name);
      if (at == all.end()) {
        std::string have;
        for (const std::string& n : all) have += (have.empty() ? "" : ", ") + n;
        fail(path_, "no column '", name, "' (the header has: ", have, ")");
      }
      ix.keep.push_back(at - all.begin());
    }
    if (o_.columns.empty())
      for (int64_t j = 0; j < ix.width; ++j) ix.keep.push_back(j);
    for (int64_t j : ix.keep) ix.names.push_back(all[static_cast<size_t>(j)]);
    ix.stride = stride_;
    ix.offsets = std::move(offsets_);
    ix.lines = std::move(lines_);
    ix.file_bytes = file_bytes;
    // The first data row parses, so a text column is an error now rather than when observed.
    auto row = Value::alloc(ix.dtype, {1, static_cast<int64_t>(ix.keep.size())});
    for (size_t k = 0; k < ix.keep.size(); ++k)
      put(path_, ix, data_line_, k, data_[static_cast<size_t>(ix.keep[k])], row->view(),
          static_cast<int64_t>(k));
    return ix;
  }

 private:
  const std::string& path_;
  const CsvOptions& o_;
  bool collect_ = true, header_ = false;
  std::string field_;
  std::vector<std::string> fields_, first_, data_;
  int64_t records_ = 0, first_line_ = 1, data_line_ = 1, stride_ = 1;
  std::vector<int64_t> offsets_, lines_;
};

// Parses the rows of `box` from `text` (bytes from `base` of the file, starting at a data
// row's beginning on `line`; `skip` data rows come first).
class RowSink {
 public:
  RowSink(const std::string& path, const CsvIndex& ix, const poly::Box& box, const View& out, int64_t skip)
      : path_(path), ix_(ix), box_(box), out_(out), skip_(skip), fields_(static_cast<size_t>(ix.width)) {
    wanted_.assign(static_cast<size_t>(ix.width), false);
    for (int64_t k = box.lo[1]; k <= box.hi[1]; ++k) wanted_[static_cast<size_t>(ix.keep[k])] = true;
    collect_ = skip_ == 0;
  }

  void ch(char c) {
    if (collect_ && field_ < ix_.width && wanted_[static_cast<size_t>(field_)])
      fields_[static_cast<size_t>(field_)] += c;
  }
  void field_end() { ++field_; }
  void record_end(const CsvRecord& r, bool blank) {
    const int64_t fields = field_;
    field_ = 0;
    if (blank) return;
    const int64_t i = row_++ - skip_;
    if (i >= 0 && i < box_.extent(0)) {
      if (fields != ix_.width)
        fail(path_, "line ", r.line, " has ", fields, " fields, the header has ", ix_.width);
      for (int64_t k = box_.lo[1]; k <= box_.hi[1]; ++k) {
        const int64_t at = out_.offset + i * out_.strides[0] + (k - box_.lo[1]) * out_.strides[1];
        put(path_, ix_, r.line, static_cast<size_t>(k), fields_[static_cast<size_t>(ix_.keep[k])], out_, at);
      }
      ++done_;
    }
    for (std::string& f : fields_) f.clear();
    collect_ = row_ - skip_ >= 0 && row_ - skip_ < box_.extent(0);
  }
  int64_t done() const { return done_; }

 private:
  const std::string& path_;
  const CsvIndex& ix_;
  const poly::Box& box_;
  const View& out_;
  int64_t skip_;
  std::vector<std::string> fields_;
  std::vector<bool> wanted_;
  bool collect_ = false;
  int64_t field_ = 0, row_ = 0, done_ = 0;
};

// The bytes of the rows of `box`: from the place at or before its first row to the place
// after its last (or the file's end).
struct RowSpan {
  int64_t begin, end, line, skip;
};
RowSpan span_of(const CsvIndex& ix, const poly::Box& box) {
  const auto p0 = static_cast<size_t>(box.lo[0] / ix.stride);
  const auto p1 = static_cast<size_t>((box.hi[0] + ix.stride) / ix.stride);
  return {ix.offsets[p0], p1 < ix.offsets.size() ? ix.offsets[p1] : ix.file_bytes, ix.lines[p0],
          box.lo[0] - static_cast<int64_t>(p0) * ix.stride};
}

void parse_rows(const std::string& path, const CsvIndex& ix, const char* text, const RowSpan& s,
                const poly::Box& box, const View& out) {
  RowSink sink(path, ix, box, out, s.skip);
  CsvTokenizer t(ix.delimiter, s.begin, s.line);
  t.feed(text, static_cast<size_t>(s.end - s.begin), s.begin, sink);
  t.finish(path, s.end, sink);
  if (sink.done() != box.extent(0))
    fail(path, "rows ", box.lo[0] + 1, " to ", box.hi[0] + 1,
         " are not where the index put them (the file changed)");
}

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
  const auto n = static_cast<size_t>(ints[at++]);
  internal_check(ints.size() - at >= (n + 7) / 8);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    const auto word = static_cast<uint64_t>(ints[at++]);
    std::memcpy(s.data() + i, &word, std::min<size_t>(8, n - i));
  }
  return s;
}

}  // namespace

std::vector<int64_t> CsvIndex::encode() const {
  std::vector<int64_t> v = {delimiter,
                            static_cast<int64_t>(dtype),
                            header,
                            width,
                            rows,
                            stride,
                            file_bytes,
                            static_cast<int64_t>(keep.size()),
                            static_cast<int64_t>(offsets.size())};
  v.insert(v.end(), keep.begin(), keep.end());
  v.insert(v.end(), offsets.begin(), offsets.end());
  v.insert(v.end(), lines.begin(), lines.end());
  for (const std::string& n : names) put_string(v, n);
  return v;
}

CsvIndex CsvIndex::decode(const std::vector<int64_t>& v) {
  internal_check(v.size() >= 9 && v[7] >= 0 && v[8] >= 0 && v[1] >= 0 && v[1] < kNumDTypes);
  CsvIndex ix;
  ix.delimiter = static_cast<char>(v[0]);
  ix.dtype = static_cast<DType>(v[1]);
  ix.header = v[2] != 0;
  ix.width = v[3];
  ix.rows = v[4];
  ix.stride = v[5];
  ix.file_bytes = v[6];
  const auto nk = static_cast<size_t>(v[7]), np = static_cast<size_t>(v[8]);
  internal_check(v.size() >= 9 + nk + 2 * np);
  auto at = v.begin() + 9;
  ix.keep.assign(at, at + static_cast<ptrdiff_t>(nk));
  at += static_cast<ptrdiff_t>(nk);
  ix.offsets.assign(at, at + static_cast<ptrdiff_t>(np));
  at += static_cast<ptrdiff_t>(np);
  ix.lines.assign(at, at + static_cast<ptrdiff_t>(np));
  size_t pos = 9 + nk + 2 * np;
  for (size_t k = 0; k < nk; ++k) ix.names.push_back(get_string(v, pos));
  internal_check(pos == v.size());
  return ix;
}

char default_delimiter(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".tsv") == 0 ? '\t' : ',';
}

CsvIndex index_csv(const std::string& path, const CsvOptions& o) {
  const std::unique_ptr<ByteSource> src = open_bytes(path);  // a file or a URL
  const int64_t size = src->size();
  IndexSink sink(path, o);
  CsvTokenizer t(o.delimiter);
  std::string buf;
  for (int64_t at = 0; at < size; at += static_cast<int64_t>(buf.size())) {
    buf.resize(static_cast<size_t>(std::min<int64_t>(size - at, kPiece)));
    src->read_at(buf.data(), buf.size(), at);
    t.feed(buf.data(), buf.size(), at, sink);
  }
  t.finish(path, size, sink);
  stats().bytes_read += static_cast<uint64_t>(size);
  return sink.finish(size);
}

void read_csv_box(const std::string& path, const CsvIndex& ix, const poly::Box& box, const View& out) {
  internal_check(box.rank() == 2 && out.rank() == 2 && out.dtype == ix.dtype);
  if (box.empty()) return;
  const RowSpan s = span_of(ix, box);
  std::string text(static_cast<size_t>(s.end - s.begin), '\0');
  open_bytes(path)->read_at(text.data(), text.size(), s.begin);
  stats().bytes_read += text.size();
  parse_rows(path, ix, text.data(), s, box, out);
  note_io_progress(out.numel() * dtype_size(out.dtype));
}

CsvTable parse_csv(const std::string& path, const std::string& text, const CsvOptions& o) {
  IndexSink isink(path, o);
  CsvTokenizer t(o.delimiter);
  t.feed(text.data(), text.size(), 0, isink);
  t.finish(path, static_cast<int64_t>(text.size()), isink);
  const CsvIndex ix = isink.finish(static_cast<int64_t>(text.size()));
  CsvTable table;
  table.names = ix.names;
  table.value = Value::alloc(ix.dtype, {ix.rows, static_cast<int64_t>(ix.keep.size())});
  const poly::Box all = poly::Box::of_shape(table.value->view().shape);
  const RowSpan s = span_of(ix, all);
  parse_rows(path, ix, text.data() + s.begin, s, all, table.value->view());
  return table;
}

}  // namespace tapestry::io
