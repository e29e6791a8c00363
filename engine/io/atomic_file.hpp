// Whole files that are never seen half-written.
//   write_file_atomically("out.csv", text);   // path.partial-PID, flushed, then renamed over path
//   write_atomically("x.h5", [&](const std::string& tmp) { /* write the file tmp */ });
// Only a regular file (or nothing) at `path` is replaced (check_replaceable); on any failure the
// temporary is removed, `path` keeps its previous content and the Error names `path`.
#pragma once

#include <functional>
#include <string>

namespace tapestry::io {

void write_file_atomically(const std::string& path, const std::string& bytes);

// `write` makes the file it is given (path.partial-PID), which is then renamed over `path`. An
// Error naming the temporary names `path` instead.
void write_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write);

}  // namespace tapestry::io
