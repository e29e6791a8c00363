// An owned file descriptor for writing at offsets, shared by the writers whose ranks write
// their parts of one file in parallel (.npy, safetensors, HDF5, CSV).
//   const WriteFile f("out.npy.partial-7", O_WRONLY, "for writing");
//   f.write_at(bytes, n, offset);      // pwrite, in pieces, each reported to the progress bar
// Every failure is an Error naming the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tapestry::io {

class WriteFile {
 public:
  // flags for open(2) (O_CLOEXEC added, mode 0644); `what` ends "cannot open PATH WHAT: ...".
  WriteFile(const std::string& path, int flags, const char* what);
  ~WriteFile();
  WriteFile(const WriteFile&) = delete;
  WriteFile& operator=(const WriteFile&) = delete;

  // progress: count the bytes as file data on the progress bar (a header is not).
  void write_at(const char* p, size_t n, int64_t off, bool progress = true) const;
  void resize(int64_t bytes) const;

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace tapestry::io
