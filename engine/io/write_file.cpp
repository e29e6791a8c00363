// Writing at offsets (write_file.hpp).
#include "engine/io/write_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/ir/error.hpp"
#include "engine/telemetry/progress.hpp"

namespace tapestry::io {

namespace {

// Large writes go in pieces so the progress bar moves during one big box.
constexpr size_t kPiece = size_t(16) << 20;

}  // namespace

WriteFile::WriteFile(const std::string& path, int flags, const char* what) : path_(path) {
  do fd_ = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw Error(cat_str("'", path, "': cannot open ", what, ": ", std::strerror(errno)));
}

WriteFile::~WriteFile() {
  if (fd_ >= 0) ::close(fd_);
}

void WriteFile::write_at(const char* p, size_t n, int64_t off, bool progress) const {
  while (n > 0) {
    const ssize_t k = ::pwrite(fd_, p, std::min(n, kPiece), off);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) throw Error(cat_str("'", path_, "': write failed: ", std::strerror(errno)));
    p += k;
    n -= static_cast<size_t>(k);
    off += k;
    if (progress) note_io_progress(k);
  }
}

void WriteFile::resize(int64_t bytes) const {
  if (::ftruncate(fd_, bytes) != 0)
    throw Error(cat_str("'", path_, "': cannot size the file: ", std::strerror(errno)));
}

}  // namespace tapestry::io
