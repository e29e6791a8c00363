// CSV and TSV files as 2-D tensors: rows are records, columns are fields.
//   CsvIndex ix = index_csv("data.csv", {});              // one pass: rows, columns, names
//   read_csv_box("data.csv", ix, box, out);               // parses only the rows of `box`
//   write_csv("out.csv", value.view(), ',', {"x", "y"});   // written beside, then renamed
// Reading follows RFC 4180 (quoted fields, "" inside quotes, CRLF or LF line ends;
// csv_tokens.hpp); a field is a number as strtod reads it ("nan" and "inf" included), an empty
// field is NaN (an error for integer and bool dtypes). A text cannot be cut by byte offset
// without scanning it, so index_csv reads it once, counting records and noting where every
// stride-th row starts (at most ~2048 places); a box then reads from the place before its first
// row to the place after its last and parses only its own rows, so on N ranks each parses its
// share. The index checks every row's field count and the first data row's kept fields; a bad
// field further down is found by the read that parses it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/value.hpp"
#include "engine/poly/box.hpp"

namespace tapestry::io {

struct CsvOptions {
  char delimiter = ',';
  std::optional<bool> header;  // nullopt: the first row is a header when a field is not a number
  // The columns to keep, in order: a name (needs a header) or a 0-based index each; empty = all.
  std::vector<std::variant<std::string, int64_t>> columns;
  DType dtype = DType::F32;
};

struct CsvIndex {
  char delimiter = ',';
  DType dtype = DType::F32;
  bool header = false;
  int64_t width = 0;               // fields in every record
  int64_t rows = 0;                // data records
  std::vector<int64_t> keep;       // the file column (0-based) of each kept column
  std::vector<std::string> names;  // of the kept columns: the header's, or "1", "2", ... without one
  int64_t stride = 1;              // data rows between two places
  std::vector<int64_t> offsets;    // where data rows 0, stride, 2 stride, ... start (bytes)
  std::vector<int64_t> lines;      // and their lines (1-based)
  int64_t file_bytes = 0;
  // As integers, for a load node's attributes (engine/ir/load_attrs.hpp).
  std::vector<int64_t> encode() const;
  static CsvIndex decode(const std::vector<int64_t>& ints);
};

struct CsvTable {
  std::vector<std::string> names;  // of the kept columns
  std::shared_ptr<Value> value;    // {rows, columns}
};

// The default delimiter of a path: a tab for ".tsv", else a comma.
char default_delimiter(const std::string& path);

// Reads the file (or http(s) URL) once, in pieces.
CsvIndex index_csv(const std::string& path, const CsvOptions& o);
// The rows and kept columns of `box` (of {ix.rows, ix.keep.size()}) into `out` (box's
// extents, ix.dtype, any strides). Errors name the line and column of a bad field.
void read_csv_box(const std::string& path, const CsvIndex& ix, const poly::Box& box, const View& out);

// The whole table from text in memory (`path` names errors).
CsvTable parse_csv(const std::string& path, const std::string& text, const CsvOptions& o);

// The text of the rows of a 1-D or 2-D value, each ending in '\n' (a parallel save formats
// each rank's rows where they lie), and of a header row ("" without names).
std::string format_csv_rows(const View& v, char delimiter);
std::string csv_header_line(const std::vector<std::string>& names, char delimiter);

// Writes a 1-D (one column) or 2-D value; `names` (empty: no header row) one per column.
// Fields are the shortest text that reads back to the same value; bools are 1 and 0.
void write_csv(const std::string& path, const View& v, char delimiter, const std::vector<std::string>& names);

}  // namespace tapestry::io
