// Whole files written beside their path and renamed (atomic_file.hpp).
#include "engine/io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/io/npy.hpp"
#include "engine/ir/error.hpp"

namespace tapestry::io {

void write_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write) {
  check_replaceable(path);
  const std::string tmp = cat_str(path, ".partial-", ::getpid());
  ::unlink(tmp.c_str());  // a temporary left by a crashed process with our pid
  try {
    write(tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(cat_str("'", path, "': cannot write: ", std::strerror(errno)));
  } catch (const Error& e) {
    ::unlink(tmp.c_str());
    std::string msg = e.what();
    const std::string quoted = "'" + tmp + "'";
    if (msg.compare(0, quoted.size(), quoted) == 0) msg = "'" + path + "'" + msg.substr(quoted.size());
    throw Error(msg);
  }
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  check_replaceable(path);
  const std::string tmp = cat_str(path, ".partial-", ::getpid());
  ::unlink(tmp.c_str());  // a temporary left by a crashed process with our pid
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(cat_str("'", path, "': cannot write: ", std::strerror(errno)));
  const char* p = bytes.data();
  size_t n = bytes.size();
  std::string why;
  while (n > 0 && why.empty()) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) why = std::strerror(errno);
    else p += k, n -= static_cast<size_t>(k);
  }
  if (::close(fd) != 0 && why.empty()) why = std::strerror(errno);
  if (why.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) why = std::strerror(errno);
  if (!why.empty()) {
    ::unlink(tmp.c_str());
    throw Error(cat_str("'", path, "': cannot write: ", why));
  }
}

}  // namespace tapestry::io
