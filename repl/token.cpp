// Tokens come from getrandom(2), never from a seeded PRNG: whoever holds one can run any
// code as the server's user.
#include "repl/token.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "repl/shell_env.hpp"

namespace tapestry::repl {

namespace {

std::runtime_error file_error(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

std::string new_token() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("no randomness for a token: ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  static const char hex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += hex[b >> 4];
    token += hex[b & 15];
  }
  return token;
}

std::string default_token_path() {
  const std::optional<std::string>& home = shell_env().home;
  if (!home || home->empty()) return {};
  return *home + "/.tapestry/serve.token";
}

FileId write_private_file(const std::string& path, std::string_view text, unsigned mode) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (slash != std::string::npos && slash > 0 && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw file_error("cannot create the folder", dir);
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) throw file_error("cannot use the folder", dir);
  if (!S_ISDIR(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0))
    throw std::runtime_error("refusing the folder '" + dir + "': not a folder owned by you or root");
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode))
      throw std::runtime_error("refusing to replace '" + path + "': not a regular file");
    if (st.st_uid != geteuid())
      throw std::runtime_error("refusing to write '" + path + "': it belongs to another user (uid " +
                               std::to_string(st.st_uid) + ")");
  } else if (errno != ENOENT) {
    throw file_error("cannot write", path);
  }
  // A fresh inode that only we can open, renamed into place whole.
  const std::string tmp = path + ".tmp-" + std::to_string(getpid()) + "-" + new_token().substr(0, 8);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) throw file_error("cannot write", path);
  const bool ok = fchmod(fd, mode) == 0 &&
                  write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  fstat(fd, &st) == 0;
  const int saved = errno;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = ok ? errno : saved;
    unlink(tmp.c_str());
    errno = err;
    throw file_error("cannot write", path);
  }
  return FileId{static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino)};
}

void remove_own_file(const std::string& path, FileId id) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && static_cast<unsigned long long>(st.st_dev) == id.dev &&
      static_cast<unsigned long long>(st.st_ino) == id.ino)
    unlink(path.c_str());
}

FileId write_token_file(const std::string& path, std::string_view token) {
  std::string line(token);
  line += '\n';
  return write_private_file(path, line, 0600);
}

std::string read_token_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw file_error("cannot read the token file", path);
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf);
  const int saved = errno;
  close(fd);
  errno = saved;
  if (n < 0) throw file_error("cannot read the token file", path);
  std::string s(buf, static_cast<size_t>(n));
  s = s.substr(0, s.find_first_of("\r\n"));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

bool tokens_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace tapestry::repl
