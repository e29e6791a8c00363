// Writing CSV and TSV (csv.hpp): every number in the shortest text that reads back the same.
#include "engine/io/csv.hpp"

#include <charconv>
#include <string>

#include "engine/io/atomic_file.hpp"
#include "engine/ir/error.hpp"
#include "engine/telemetry/progress.hpp"
#include "engine/telemetry/stats.hpp"

namespace tapestry::io {

namespace {

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
    default: throw InternalError("csv: the writer's caller casts to f32, f64, i32, i64 or bool");
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
