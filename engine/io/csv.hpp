// CSV and TSV files as 2-D tensors: rows are records, columns are fields.
//   CsvTable t = read_csv("data.csv", {});            // header detected, every column, f32
//   write_csv("out.csv", value.view(), ',', {"x", "y"});   // written beside, then renamed
// Reading follows RFC 4180 (quoted fields, "" inside quotes, CRLF or LF line ends); a field
// is a number as strtod reads it ("nan" and "inf" included), an empty field is NaN (an error
// for integer and bool dtypes). Text files cannot be cut by byte offset without scanning, so
// this process reads the whole file; on N ranks the planner shards the tensor afterwards.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/ir/dtype.hpp"
#include "engine/ir/value.hpp"

namespace tapestry::io {

struct CsvOptions {
  char delimiter = ',';
  std::optional<bool> header;  // nullopt: the first row is a header when a field is not a number
  // The columns to keep, in order: a name (needs a header) or a 0-based index each; empty = all.
  std::vector<std::variant<std::string, int64_t>> columns;
  DType dtype = DType::F32;
};

struct CsvTable {
  std::vector<std::string> names;  // of the kept columns: the header's, or "1", "2", ... without one
  std::shared_ptr<Value> value;    // {rows, columns}
};

// The default delimiter of a path: a tab for ".tsv", else a comma.
char default_delimiter(const std::string& path);

CsvTable read_csv(const std::string& path, const CsvOptions& o);
// The same from text in memory (`path` names errors).
CsvTable parse_csv(const std::string& path, const std::string& text, const CsvOptions& o);

// The text of the rows of a 1-D or 2-D value, each ending in '\n' (a parallel save formats
// each rank's rows where they lie), and of a header row ("" without names).
std::string format_csv_rows(const View& v, char delimiter);
std::string csv_header_line(const std::vector<std::string>& names, char delimiter);

// Writes a 1-D (one column) or 2-D value; `names` (empty: no header row) one per column.
// Fields are the shortest text that reads back to the same value; bools are 1 and 0.
void write_csv(const std::string& path, const View& v, char delimiter, const std::vector<std::string>& names);

}  // namespace tapestry::io
