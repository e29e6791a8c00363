// CSV and TSV reading and writing (csv.hpp).
#include "engine/io/csv.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "engine/io/atomic_file.hpp"
#include "engine/ir/error.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry::io {

namespace {

template <class... Args> [[noreturn]] void fail(const std::string& path, const Args&... args) {
  throw Error(cat_str("'", path, "': ", args...));
}

struct Row {
  int64_t line = 0;  // 1-based line where the record starts
  std::vector<std::string> fields;
};

// RFC 4180 records: a quoted field may hold the delimiter, newlines and "" for a quote.
std::vector<Row> split_records(const std::string& path, const std::string& text, char delim) {
  std::vector<Row> rows;
  Row row;
  std::string field;
  int64_t line = 1;
  row.line = 1;
  bool quoted = false, any = false;
  auto end_field = [&] {
    row.fields.push_back(std::move(field));
    field.clear();
  };
  auto end_row = [&] {
    end_field();
    // A blank line is no record (a trailing newline included).
    if (!(row.fields.size() == 1 && row.fields[0].empty())) rows.push_back(std::move(row));
    row = Row{};
    row.line = line;
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty()) {
      quoted = any = true;
    } else if (c == delim) {
      end_field();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      ++line;
      end_row();
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) fail(path, "line ", row.line, ": a quoted field is not closed");
  if (any || !field.empty()) end_row();
  return rows;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// A field as a double; nullopt when it is not a number (empty is NaN).
std::optional<double> number(const std::string& raw) {
  const std::string s = trim(raw);
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// Stores field `raw` of (line, column) as element i of `out`.
void put(const std::string& path, const Row& r, const std::string& col, const std::string& raw,
         const View& out, int64_t i) {
  const std::string s = trim(raw);
  auto bad = [&](const char* want) {
    fail(path, "line ", r.line, ", column ", col, ": '", raw, "' is not ", want);
  };
  switch (out.dtype) {
    case DType::F32:
    case DType::F64: {
      const std::optional<double> v = number(s);
      if (!v) bad("a number");
      if (out.dtype == DType::F32) out.ptr<float>()[i] = static_cast<float>(*v);
      else out.ptr<double>()[i] = *v;
      return;
    }
    case DType::I32:
    case DType::I64: {
      int64_t v = 0;
      const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || p != s.data() + s.size()) bad("an integer");
      if (out.dtype == DType::I32) {
        if (v < INT32_MIN || v > INT32_MAX) bad("an i32");
        out.ptr<int32_t>()[i] = static_cast<int32_t>(v);
      } else {
        out.ptr<int64_t>()[i] = v;
      }
      return;
    }
    case DType::Bool: {
      const bool t = s == "1" || s == "true" || s == "True" || s == "TRUE";
      const bool f = s == "0" || s == "false" || s == "False" || s == "FALSE";
      if (!t && !f) bad("a bool (1, 0, true, false)");
      out.ptr<bool>()[i] = t;
      return;
    }
  }
  throw InternalError("csv: unknown dtype");
}

// The shortest text that reads back as element (i, j).
std::string field_text(const View& v, int64_t i, int64_t j) {
  const int64_t k = v.offset + i * v.strides[0] + (v.rank() > 1 ? j * v.strides[1] : 0);
  char buf[64];
  std::to_chars_result r{};
  switch (v.dtype) {
    case DType::F32:
      r = std::to_chars(buf, buf + sizeof buf, static_cast<const float*>(v.buf->data())[k]);
      break;
    case DType::F64:
      r = std::to_chars(buf, buf + sizeof buf, static_cast<const double*>(v.buf->data())[k]);
      break;
    case DType::I32:
      r = std::to_chars(buf, buf + sizeof buf, static_cast<const int32_t*>(v.buf->data())[k]);
      break;
    case DType::I64:
      r = std::to_chars(buf, buf + sizeof buf, static_cast<const int64_t*>(v.buf->data())[k]);
      break;
    case DType::Bool: return static_cast<const bool*>(v.buf->data())[k] ? "1" : "0";
  }
  return std::string(buf, r.ptr);
}

// A header field, quoted when it holds the delimiter, a quote or a line end.
std::string quoted(const std::string& s, char delim) {
  if (s.find_first_of(std::string{delim, '"', '\n', '\r'}) == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  q += '"';
  return q;
}

}  // namespace

char default_delimiter(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".tsv") == 0 ? '\t' : ',';
}

CsvTable parse_csv(const std::string& path, const std::string& text, const CsvOptions& o) {
  std::vector<Row> rows = split_records(path, text, o.delimiter);
  if (rows.empty()) fail(path, "no rows");
  const size_t width = rows[0].fields.size();
  bool header = false;
  if (o.header) {
    header = *o.header;
  } else {
    for (const std::string& f : rows[0].fields) header = header || !number(f);
  }
  std::vector<std::string> all_names;
  for (size_t j = 0; j < width; ++j)
    all_names.push_back(header ? trim(rows[0].fields[j]) : std::to_string(j + 1));
  // The kept columns.
  std::vector<size_t> keep;
  for (const auto& c : o.columns) {
    if (const int64_t* i = std::get_if<int64_t>(&c)) {
      if (*i < 0 || *i >= static_cast<int64_t>(width))
        fail(path, "column ", *i + 1, " is out of range: the file has ", width, " columns");
      keep.push_back(static_cast<size_t>(*i));
    } else {
      const std::string& name = std::get<std::string>(c);
      if (!header) fail(path, "column '", name, "' asked for by name, but the file has no header row");
      size_t at = width;
      for (size_t j = 0; j < width; ++j)
        if (all_names[j] == name) at = j;
      if (at == width) {
        std::string have;
        for (const std::string& n : all_names) have += (have.empty() ? "" : ", ") + n;
        fail(path, "no column '", name, "' (the header has: ", have, ")");
      }
      keep.push_back(at);
    }
  }
  if (o.columns.empty())
    for (size_t j = 0; j < width; ++j) keep.push_back(j);
  const size_t first = header ? 1 : 0;
  const int64_t nrows = static_cast<int64_t>(rows.size() - first);
  if (nrows == 0) fail(path, "a header and no data rows");
  CsvTable t;
  for (size_t j : keep) t.names.push_back(all_names[j]);
  t.value = Value::alloc(o.dtype, {nrows, static_cast<int64_t>(keep.size())});
  const View out = t.value->view();
  for (size_t r = first; r < rows.size(); ++r) {
    const Row& row = rows[r];
    if (row.fields.size() != width)
      fail(path, "line ", row.line, " has ", row.fields.size(), " fields, line ", rows[0].line, " has ",
           width);
    for (size_t k = 0; k < keep.size(); ++k) {
      const size_t j = keep[k];
      const std::string col = header ? cat_str("'", all_names[j], "' (", j + 1, ")") : std::to_string(j + 1);
      put(path, row, col, row.fields[j], out, static_cast<int64_t>((r - first) * keep.size() + k));
    }
  }
  return t;
}

CsvTable read_csv(const std::string& path, const CsvOptions& o) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, "cannot open for reading: ", std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail(path, "read failed");
  const std::string text = ss.str();
  stats().bytes_read += text.size();
  return parse_csv(path, text, o);
}

std::string csv_header_line(const std::vector<std::string>& names, char delimiter) {
  std::string text;
  for (size_t j = 0; j < names.size(); ++j) {
    if (j) text += delimiter;
    text += quoted(names[j], delimiter);
  }
  if (!names.empty()) text += '\n';
  return text;
}

std::string format_csv_rows(const View& v, char delimiter) {
  internal_check(v.rank() == 1 || v.rank() == 2);
  const int64_t rows = v.shape[0], cols = v.rank() == 2 ? v.shape[1] : 1;
  std::string text;
  text.reserve(static_cast<size_t>(rows * cols * 8));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      if (j) text += delimiter;
      text += field_text(v, i, j);
    }
    text += '\n';
  }
  note_io_progress(v.numel() * dtype_size(v.dtype));
  return text;
}

void write_csv(const std::string& path, const View& v, char delimiter,
               const std::vector<std::string>& names) {
  internal_check(v.rank() == 1 || v.rank() == 2);
  internal_check(names.empty() || static_cast<int64_t>(names.size()) == (v.rank() == 2 ? v.shape[1] : 1));
  const std::string text = csv_header_line(names, delimiter) + format_csv_rows(v, delimiter);
  write_file_atomically(path, text);
  stats().bytes_written += text.size();
}

}  // namespace tapestry::io
