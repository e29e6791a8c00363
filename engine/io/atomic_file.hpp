// Whole files that are never seen half-written.
//   write_file_atomically("out.csv", text);   // path.partial-PID, flushed, then renamed over path
// Only a regular file (or nothing) at `path` is replaced (check_replaceable); on any failure the
// temporary is removed, `path` keeps its previous content and the Error names `path`.
#pragma once

#include <string>

namespace tapestry::io {

void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace tapestry::io
