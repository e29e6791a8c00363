// The RFC 4180 state machine shared by the CSV index (csv_index.cpp) and the CSV parser
// (csv.cpp): fed text in pieces, it reports characters, field ends and record ends.
//   struct Sink { void ch(char); void field_end(); void record_end(const CsvRecord&); };
//   CsvTokenizer t(',');  t.feed(text, n, 0, sink);  t.finish(path, sink);
// A quoted field may hold the delimiter, line breaks and "" for a quote (a quote opens a field
// only as its first character); LF, CR LF and CR end a record; a record that is one empty
// field (a blank line) is none. Lines are counted as the text has them, breaks inside quoted
// fields included, so errors name the line an editor shows.
#pragma once

#include <cstdint>
#include <string>

#include "engine/ir/error.hpp"

namespace tapestry::io {

struct CsvRecord {
  int64_t offset = 0;  // of its first byte
  int64_t line = 1;    // where it starts, 1-based
  int64_t fields = 0;
  int64_t end = 0;  // one past its last byte, its line break included
};

class CsvTokenizer {
 public:
  explicit CsvTokenizer(char delimiter, int64_t offset = 0, int64_t line = 1) : delim_(delimiter) {
    rec_.offset = offset;
    rec_.line = line_ = line;
  }

  // `n` bytes that start at byte `base` of the file.
  template <class Sink> void feed(const char* p, size_t n, int64_t base, Sink& sink) {
    for (size_t i = 0; i < n; ++i) {
      const char c = p[i];
      const int64_t off = base + static_cast<int64_t>(i);
      if (cr_) {  // CR LF is one line end
        cr_ = false;
        if (c == '\n') {
          rec_.offset = off + 1;
          continue;
        }
      }
      if (quote_) {  // a quote inside a quoted field: "" or the field's end
        quote_ = false;
        if (c == '"') {
          ++len_;
          sink.ch('"');
          continue;
        }
        quoted_ = false;
      }
      if (quoted_) {
        if (c == '"') {
          quote_ = true;
        } else {
          if (c == '\n') ++line_;
          ++len_;
          sink.ch(c);
        }
        continue;
      }
      if (c == '"' && len_ == 0) {
        quoted_ = true;
      } else if (c == delim_) {
        sink.field_end();
        ++rec_.fields;
        len_ = 0;
      } else if (c == '\n' || c == '\r') {
        cr_ = c == '\r';
        ++line_;
        end_record(off + 1, sink);
      } else {
        ++len_;
        sink.ch(c);
      }
    }
  }

  // The end of the text: a record without a final line break ends here. `path` names the error
  // of a quoted field left open.
  template <class Sink> void finish(const std::string& path, int64_t end, Sink& sink) {
    if (quote_) quote_ = quoted_ = false;
    if (quoted_) throw Error(cat_str("'", path, "': line ", rec_.line, ": a quoted field is not closed"));
    if (rec_.fields > 0 || len_ > 0) end_record(end, sink);
  }

 private:
  template <class Sink> void end_record(int64_t end, Sink& sink) {
    sink.field_end();
    ++rec_.fields;
    rec_.end = end;
    const bool blank = rec_.fields == 1 && len_ == 0;
    sink.record_end(rec_, blank);
    rec_ = CsvRecord{end, line_, 0, 0};
    len_ = 0;
  }

  char delim_;
  CsvRecord rec_;
  int64_t line_ = 1;
  int64_t len_ = 0;  // characters in the current field
  bool quoted_ = false, quote_ = false, cr_ = false;
};

}  // namespace tapestry::io
